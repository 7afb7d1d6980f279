# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import the module runtime once, in the controller, before Ansible forks its workers."""

from __future__ import annotations

DOCUMENTATION = r"""
name: lab_preload
type: aggregate
short_description: The lab's modules' runtime imported once, before the workers fork
description:
  - Ansible forks one worker process per task and host. Where the lab's in-worker action
    (action_plugins/lab_in_worker.py) runs a module inside that worker, the module imported
    C(ansible.module_utils.basic) and the lab's module_utils afresh in every worker - 0.1 to
    0.2 s of each task on the lab's 2-core machine. This callback imports them once in the
    controller process when the run starts; every worker is a fork of it and finds them
    imported.
  - It also gives every action the in-worker run (the action's C(install)). Ansible's own modules
    (command, stat, copy, file, slurp, the modules template runs) and collections' modules
    (kubernetes.core.k8s) run in the worker on the local host as the lab's modules do, instead of
    a new Python per module - the same conditions, the same result (tests/unit/plugins/test_in_worker.py).
  - It prints nothing and changes no result. Modules that run the normal way (AnsiballZ - over
    SSH, with become) are not affected. C(GPU_INCIDENT_LAB_IN_WORKER=0) turns it off with the
    in-worker action.
  - Loaded from the project's callback_plugins folder without being enabled (like a stdout
    callback, it needs no C(callbacks_enabled) entry).
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
"""

import importlib
import sys

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import action_loader

# what nearly every lab module imports, and what the modules a lab run calls several times
# import (containerd_merge, manifest_drift, node_resources); the rest is imported by the module
# that needs it
PRELOAD = ("ansible.module_utils.basic", "yaml", "ansible.module_utils.lab.refusals",
           "ansible.module_utils.lab.files", "ansible.module_utils.kube.client",
           "ansible.module_utils.lab.yaml_load", "ansible.module_utils.containerd.loader",
           "ansible.module_utils.kube.compare", "ansible.module_utils.kube.apply",
           "ansible.module_utils.kube.nodes")


def in_worker():
    """The in-worker action's module (action_plugins/lab_in_worker.py), through Ansible's plugin
    loader: its decision (on, the ansible-core series, the switch) and its module_utils path
    handling are the one definition both use. None where the action is not found."""
    cls = action_loader.get("lab_in_worker", class_only=True)
    return sys.modules.get(cls.__module__) if cls is not None else None


def preload(worker=None):
    """Import PRELOAD, with the configured module_utils folders on ansible.module_utils' path as
    the in-worker action puts them. What cannot be imported is left to the module (it fails
    there with its own words). Returns the names imported."""
    worker = worker or in_worker()
    # Ansible's own module_utils first, before the lab's folders join the package's path
    import ansible.module_utils.basic  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    worker.join_module_utils()
    done = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        done.append(name)
    return done


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "lab_preload"
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        worker = in_worker()
        on = worker is not None and worker.decision()[0]
        self.preloaded = preload(worker) if on else []
        # every action's modules (Ansible's own, collections') in the worker, not only the lab's
        self.every_module_in_worker = worker.install() or worker.ActionBase._execute_module is worker.execute_module if on else False
