# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's modules, run inside Ansible's worker process when the host is this machine.

Every task of a module normally costs a new Python process: Ansible zips the module with its
module_utils (AnsiballZ), starts the target's interpreter, which imports
``ansible.module_utils.basic`` again, and parses the printed JSON. On the lab's own host that
is ~0.25 s of a ~0.3 s task (bench/lab-timings.sh, docs/speed.md). Ansible
already forks one worker process per task and host; when the connection is ``local`` (no
become, no async, no task ``environment``), this action runs the module's file in that worker
exactly as the AnsiballZ wrapper does (``ansible.module_utils._internal._ansiballz._loader``:
``basic._ANSIBLE_ARGS`` / ``_ANSIBLE_PROFILE`` set, the file run as ``__main__``, its printed
JSON parsed by the same ``_parse_returned_data``). The module is unchanged and still runs the
normal way on every other host - over SSH, with become, or with
``GPU_INCIDENT_LAB_IN_WORKER=0`` in the environment (tests run both and compare).
ansible.netcommon runs modules in-worker the same way (basic.py's ``_record_module_result``
hook names it).

A guarded edge, not Ansible's public surface: the module runner it copies (``basic._ANSIBLE_ARGS``,
``_ANSIBLE_PROFILE``, ``_parse_returned_data(result, profile)`` - whose signature changed between
2.18 and 2.19) is ansible-core's own inside. So it runs only on the series it was written for
(WRITTEN_FOR); on any other ansible-core it steps aside to the normal module path and says so once
(a warning, deduplicated by the controller). The lab turns it on by default; the collection an
ops team installs runs modules the normal way unless they opt in with
``GPU_INCIDENT_LAB_IN_WORKER=1`` (tests/cluster/test_collection.py runs both).

What differs in-worker: the module runs under the controller's Python (not the discovered
``ansible_python_interpreter``) and shares the worker's process state (cwd, umask, locale,
environment) - the worker is forked for this one task and exits after it, so nothing leaks
into the next task.
"""
from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import runpy
import traceback
from collections.abc import Sequence

from ansible import constants as C
from ansible import modules as ansible_modules
from ansible.executor.module_common import NEW_STYLE_PYTHON_MODULE_RE, REPLACER
from ansible.module_utils.common.json import Direction, get_module_encoder
from ansible.plugins.action import ActionBase
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.release import __version__ as ANSIBLE_CORE_VERSION
from ansible.utils.display import Display
from ansible.vars.clean import remove_internal_keys

LOCAL_CONNECTIONS = ("ansible.builtin.local", "ansible.legacy.local", "local")
SWITCH = "GPU_INCIDENT_LAB_IN_WORKER"
PROFILE = "legacy"   # the serialization profile of a module without metadata (module_common)
# the ansible-core series whose module runner this copies (see the module docstring)
WRITTEN_FOR = "2.19"
# in the lab (this file in action_plugins/) on by default; in the installed collection off
IN_COLLECTION = __name__.startswith("ansible_collections.")


def decision(environ=None, version=ANSIBLE_CORE_VERSION, in_collection=IN_COLLECTION):
    """(run in the worker?, why not - a sentence to say once, or None when there is nothing to say).

    GPU_INCIDENT_LAB_IN_WORKER=0 turns it off, =1 on; unset, the lab has it on and the collection
    off. On an ansible-core other than WRITTEN_FOR it is off whatever the switch says."""
    switch = (os.environ if environ is None else environ).get(SWITCH)
    wanted = switch == "1" or (switch is None and not in_collection)
    if not wanted:
        return False, None
    series = ".".join(str(version).split(".")[:2])
    if series != WRITTEN_FOR:
        return False, ("ansible-core %s: the lab's in-worker module runs were written for ansible-core %s.x "
                       "(they copy its module runner); modules run the normal way (AnsiballZ) instead"
                       % (version, WRITTEN_FOR))
    return True, None


def module_utils_folders():
    """The configured module_utils folders (ansible.cfg `module_utils`, ANSIBLE_MODULE_UTILS)."""
    folders = C.config.get_config_value("DEFAULT_MODULE_UTILS_PATH") or []
    return [f for f in folders if os.path.isdir(f)]


def join_module_utils():
    """The configured module_utils folders join ansible.module_utils' package path, as they are
    inside an AnsiballZ payload: `from ansible.module_utils.kube.client import Kube` then imports
    the lab's file. Only the configured folders themselves, never their subfolders (a
    subfolder's common.py would shadow ansible.module_utils.common). Also used by the
    lab_preload callback before the workers fork."""
    import ansible.module_utils  # pylint: disable=import-outside-toplevel
    for folder in reversed(module_utils_folders()):
        if folder not in ansible.module_utils.__path__:
            ansible.module_utils.__path__.insert(0, folder)


def module_file(action, name, collections=None):
    """Where module NAME can run in this worker for ACTION (an ActionBase): its file, or its
    Python name (Ansible's own modules, a collection's) - or None when it must run the normal way (in-worker off,
    not a local connection, become, async, a task ``environment``, not a new-style Python module)."""
    on, why = decision()
    if why:
        Display().warning(why)
    if not on:
        return None
    if getattr(action._connection, "ansible_name", None) not in LOCAL_CONNECTIONS:
        return None
    if action._play_context.become or action._task.async_val or any(action._task.environment or []):
        return None
    found = action._shared_loader_obj.module_loader.find_plugin_with_context(
        name, collection_list=action._task.collections if collections is None else collections)
    if not found.resolved or not str(found.plugin_resolved_path).endswith(".py"):
        return None
    if not new_style(found.plugin_resolved_path):
        return None
    short = found.plugin_resolved_name.rsplit(".", 1)[-1]
    if found.plugin_resolved_collection in ("ansible.builtin", "ansible.legacy"):
        # Ansible's own module by its Python name (ansible.modules.command), as AnsiballZ runs it;
        # a legacy module of the library folder by its file
        if os.path.dirname(found.plugin_resolved_path) == ANSIBLE_MODULES:
            return "ansible.modules." + short
        return found.plugin_resolved_path
    if found.plugin_resolved_collection:
        # a collection's module runs by its Python name, as AnsiballZ runs it (runpy.run_path
        # on a file under a collection root meets the collection loader's path hook)
        return "ansible_collections.%s.plugins.modules.%s" % (found.plugin_resolved_collection, short)
    return found.plugin_resolved_path


ANSIBLE_MODULES = os.path.dirname(ansible_modules.__file__)
_STYLES = {}


def new_style(path):
    """Is the file a new-style Python module - the kind AnsiballZ wraps (module_common's own
    test: its REPLACER or an ``ansible.module_utils`` / ``ansible_collections`` import)? Old-style,
    WANT_JSON and binary modules keep the normal way."""
    if path not in _STYLES:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            data = b""
        _STYLES[path] = bool(REPLACER in data or NEW_STYLE_PYTHON_MODULE_RE.search(data))
    return _STYLES[path]


@contextlib.contextmanager
def module_exit_funcs():
    """What a module registers with ``atexit`` (AnsibleModule.tmpdir: its temporary folder's
    removal) runs when the module ends, as it would when the module's own process exits - the
    worker leaves through ``os._exit`` and would run none of it."""
    registered = []
    real = atexit.register

    def register(func, *args, **kwargs):
        registered.append((func, args, kwargs))
        return func
    atexit.register = register
    try:
        yield
    finally:
        atexit.register = real
        for func, args, kwargs in reversed(registered):
            try:
                func(*args, **kwargs)
            except Exception:  # pylint: disable=broad-exception-caught
                pass          # as at a process's exit: one failing callback stops none of the others


def run_module(action, path, module_args, name):
    """Run the module at PATH (a file, or a collection module's Python name) in this worker with
    MODULE_ARGS (already completed by ``_update_module_args``), as the AnsiballZ wrapper runs it;
    its result as ``_execute_module`` returns it."""
    # pylint: disable=import-outside-toplevel
    from ansible.module_utils import basic

    join_module_utils()
    encoder = get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": module_args}, cls=encoder).encode()
    basic._ANSIBLE_PROFILE = PROFILE
    out, rc, trace = io.StringIO(), 0, None
    with module_exit_funcs(), contextlib.redirect_stdout(out):
        try:
            if path.startswith(("ansible_collections.", "ansible.modules.")):
                runpy.run_module(path, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(path, run_name="__main__")
            rc, printed = 1, None   # a module must exit; say so like AnsiballZ would
        except SystemExit as exc:
            rc, printed = (exc.code if isinstance(exc.code, int) else 1), True
        except Exception as exc:  # pylint: disable=broad-exception-caught
            rc, printed, trace = 1, exc, traceback.format_exc()
    if printed is not True:
        what = ("module %s did not exit" % name if printed is None
                else "module %s raised %s: %s" % (name, type(printed).__name__, printed))
        failure = dict(failed=True, msg="MODULE FAILURE: " + what, rc=rc, module_stdout=out.getvalue())
        if trace:
            failure["exception"] = trace
        return failure
    data = action._parse_returned_data({"rc": rc, "stdout": out.getvalue(), "stderr": ""}, PROFILE)
    data.pop("_ansible_suppress_tmpdir_delete", None)
    # as _execute_module: a module's own `results` key is renamed (dnf's), then internal keys go
    if "results" in data and (not isinstance(data["results"], Sequence) or isinstance(data["results"], str)):
        data["ansible_module_results"] = data.pop("results")
    remove_internal_keys(data)
    # and stdout/stderr pre-split into lines, as _execute_module does
    for stream in ("stdout", "stderr"):
        if stream in data and stream + "_lines" not in data:
            data[stream + "_lines"] = (data.get(stream) or "").splitlines()
    return data


_NORMAL_EXECUTE_MODULE = ActionBase._execute_module


def execute_module(self, module_name=None, module_args=None, tmp=None, task_vars=None, persist_files=False,
                   delete_remote_tmp=None, wrap_async=False, ignore_unknown_opts=False):
    """ActionBase._execute_module for every action: the module runs in this worker where
    module_file() allows it (Ansible's own modules - command, stat, copy, file, slurp, ... - and
    collections' - kubernetes.core.k8s), else Ansible's own method, unchanged."""
    name = module_name or self._task.action
    path = None
    if tmp is None and delete_remote_tmp is None and not wrap_async:
        path = module_file(self, name)
    if path is None:
        return _NORMAL_EXECUTE_MODULE(self, module_name=module_name, module_args=module_args, tmp=tmp,
                                      task_vars=task_vars, persist_files=persist_files,
                                      delete_remote_tmp=delete_remote_tmp, wrap_async=wrap_async,
                                      ignore_unknown_opts=ignore_unknown_opts)
    if task_vars is None:
        task_vars = {}
    if module_args is None:
        module_args = self._task.args
    self._update_module_args(name, module_args, task_vars, ignore_unknown_opts=ignore_unknown_opts)
    return run_module(self, path, module_args, name)


def install():
    """Every action's modules run in the worker where they can (ActionBase._execute_module
    replaced by execute_module); called by the lab_preload callback before the workers fork,
    only when decision() says on. Returns whether it was installed now."""
    if ActionBase._execute_module is execute_module:
        return False
    ActionBase._execute_module = execute_module
    return True


class ActionModule(NormalAction):
    """Run the task's module in this worker when the target is local, else the normal way."""

    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        path = module_file(self, self._task.action)
        if path is None:
            return super().run(tmp, task_vars)    # ansible.builtin.normal: AnsiballZ
        result = ActionBase.run(self, tmp, task_vars)
        module_args = dict(self._task.args)
        self._update_module_args(self._task.action, module_args, task_vars)
        result.update(run_module(self, path, module_args, self._task.action))
        return result
