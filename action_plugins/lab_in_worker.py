# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's modules, run inside Ansible's worker process when the host is this machine.

Every task of a module normally costs a new Python process: Ansible zips the module with its
module_utils (AnsiballZ), starts the target's interpreter, which imports
``ansible.module_utils.basic`` again, and parses the printed JSON. On the lab's own host that
is ~0.25 s of a ~0.3 s task (bench/lab-timings.sh, README "How a run stays short"). Ansible
already forks one worker process per task and host; when the connection is ``local`` (no
become, no async, no task ``environment``), this action runs the module's file in that worker
exactly as the AnsiballZ wrapper does (``ansible.module_utils._internal._ansiballz._loader``:
``basic._ANSIBLE_ARGS`` / ``_ANSIBLE_PROFILE`` set, the file run as ``__main__``, its printed
JSON parsed by the same ``_parse_returned_data``). The module is unchanged and still runs the
normal way on every other host - over SSH, with become, or with
``GPU_INCIDENT_LAB_IN_WORKER=0`` in the environment (tests run both and compare).
ansible.netcommon runs modules in-worker the same way (basic.py's ``_record_module_result``
hook names it).

What differs in-worker: the module runs under the controller's Python (not the discovered
``ansible_python_interpreter``) and shares the worker's process state (cwd, umask, locale,
environment) - the worker is forked for this one task and exits after it, so nothing leaks
into the next task.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import traceback

from ansible.module_utils.common.json import Direction, get_module_encoder
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import module_utils_loader
from ansible.vars.clean import remove_internal_keys

LOCAL_CONNECTIONS = ("local", "ansible.builtin.local", "ansible.legacy.local")
SWITCH = "GPU_INCIDENT_LAB_IN_WORKER"
PROFILE = "legacy"   # the serialization profile of a module without metadata (module_common)


class ActionModule(ActionBase):
    """Run the task's module in this worker when the target is local, else the normal way."""

    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        path = self._in_worker_path()
        if path is None:
            result.update(self._execute_module(task_vars=task_vars,
                                               wrap_async=self._task.async_val and not self._connection.has_native_async))
            if not self._task.async_val:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        module_args = dict(self._task.args)
        self._update_module_args(self._task.action, module_args, task_vars)
        result.update(self._run_in_worker(path, module_args))
        return result

    def _in_worker_path(self):
        """The module's file (or a collection module's Python name) when it can run here, else
        None (the normal path)."""
        if os.environ.get(SWITCH, "1") == "0":
            return None
        if getattr(self._connection, "_load_name", None) not in LOCAL_CONNECTIONS:
            return None
        if self._play_context.become or self._task.async_val or any(self._task.environment or []):
            return None
        found = self._shared_loader_obj.module_loader.find_plugin_with_context(
            self._task.action, collection_list=self._task.collections)
        if not found.resolved or not str(found.plugin_resolved_path).endswith(".py"):
            return None
        if found.plugin_resolved_collection:
            # a collection's module runs by its Python name, as AnsiballZ runs it (runpy.run_path
            # on a file under a collection root meets the collection loader's path hook)
            return "ansible_collections.%s.plugins.modules.%s" % (
                found.plugin_resolved_collection, found.plugin_resolved_name.rsplit(".", 1)[-1])
        return found.plugin_resolved_path

    def _run_in_worker(self, path, module_args):
        # pylint: disable=import-outside-toplevel
        import ansible.module_utils
        from ansible.module_utils import basic

        # the library's module_utils (adjacent or configured) resolve as ansible.module_utils.X,
        # as inside an AnsiballZ payload; collections' module_utils import by their own names
        # subdirs=False, as Ansible's own callers of module_utils_loader ask (its path cache keeps
        # the first answer: with subfolders, module_utils/lab_grader/common.py would shadow
        # ansible.module_utils.common, and every AnsiballZ payload built afterwards breaks)
        for folder in reversed(module_utils_loader._get_paths(subdirs=False)):  # pylint: disable=protected-access
            if folder not in ansible.module_utils.__path__ and os.path.isdir(folder):
                ansible.module_utils.__path__.insert(0, folder)
        encoder = get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)
        basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": module_args}, cls=encoder).encode()
        basic._ANSIBLE_PROFILE = PROFILE
        out, rc, trace = io.StringIO(), 0, None
        with contextlib.redirect_stdout(out):
            try:
                if path.startswith("ansible_collections."):
                    runpy.run_module(path, run_name="__main__", alter_sys=True)
                else:
                    runpy.run_path(path, run_name="__main__")
                rc, printed = 1, None   # a module must exit; say so like AnsiballZ would
            except SystemExit as exc:
                rc, printed = (exc.code if isinstance(exc.code, int) else 1), True
            except Exception as exc:  # pylint: disable=broad-exception-caught
                rc, printed, trace = 1, exc, traceback.format_exc()
        if printed is not True:
            what = ("module %s did not exit" % self._task.action if printed is None
                    else "module %s raised %s: %s" % (self._task.action, type(printed).__name__, printed))
            failure = dict(failed=True, msg="MODULE FAILURE: " + what, rc=rc, module_stdout=out.getvalue())
            if trace:
                failure["exception"] = trace
            return failure
        data = self._parse_returned_data({"rc": rc, "stdout": out.getvalue(), "stderr": ""}, PROFILE)
        data.pop("_ansible_suppress_tmpdir_delete", None)
        remove_internal_keys(data)
        return data
