# -*- coding: utf-8 -*-
# Copyright: gpu-incident-lab contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How containerd loads a main config and its ``imports``, modelled per version.

Pure Python (tomllib), no Ansible imports, so the same code serves the
``containerd_merge`` module, the grader and the tests. The semantics follow
containerd's config loader and were checked against the real 1.6.20 binary
(``containerd --config F config dump``) on the corpus under tests/:

* Load order is breadth-first: the main file, then its imports in the order
  listed, imports of imported files too; a path is loaded once. A glob is
  recognised by ``*`` only and expanded like Go's filepath.Glob (sorted by
  name, ``**`` not recursive, no match is silently ignored). A missing
  non-glob import is fatal. Relative imports resolve against the importing
  file's folder; relative *globs* only from 1.6.29 / 1.7.16 / 2.0, before
  that against the daemon's working directory.
* With version >= 2 a plugin key of fewer than four dotted parts is fatal.

What containerd makes of the files once loaded - the merge, per version - is merge.py.
"""

from __future__ import annotations

import glob as _glob
import os
import re
import tomllib

from ansible.module_utils.lab.refusals import LabError

CRI_V1 = "cri"
CRI_V2 = "io.containerd.grpc.v1.cri"
CRI_V3_RUNTIME = "io.containerd.cri.v1.runtime"
CRI_V3_IMAGES = "io.containerd.cri.v1.images"
BUILTIN_RUNTIME = "runc"

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_UNQUOTED_PLUGIN = re.compile(
    r"plugins\.(io\.containerd\.[A-Za-z0-9_-]+\.v[0-9]+\.[A-Za-z0-9_-]+)")


class ConfigError(LabError):
    """A config containerd would refuse, or one we cannot read.

    ``path``/``line``/``column`` point at the place; ``fix`` says what to do.
    """

    def __init__(self, message, path=None, line=None, column=None, fix=None,
                 mistake=None):
        self.message = message
        self.path = path
        self.line = line
        self.column = column
        self.fix = fix
        self.mistake = mistake
        super().__init__(self.__str__())

    def __str__(self):
        where = ""
        if self.path:
            where = str(self.path)
            if self.line:
                where += ":%d" % self.line
                if self.column:
                    where += ":%d" % self.column
            where += ": "
        text = where + self.message
        if self.fix:
            text += " Fix: " + self.fix
        return text


# ---------------------------------------------------------------- versions
def parse_version(text):
    """'1.6' -> (1, 6, None); '1.6.20' -> (1, 6, 20); 'v2.0.1' -> (2, 0, 1)."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+~].*)?", str(text).strip())
    if not match:
        raise ConfigError(
            "containerd_version %r is not a version; write it like 1.6, 1.7.17 or 2.1"
            % (text,))
    major, minor, patch = match.groups()
    version = (int(major), int(minor), int(patch) if patch is not None else None)
    if version[0] not in (1, 2) or (version[0] == 1 and version[1] < 5):
        raise ConfigError(
            "containerd_version %s is not modelled; supported: 1.5-1.7 (per-plugin "
            "replacement) and 2.x (deep merge)" % text)
    return version


def _at_least(version, floors):
    """True when version (major, minor, patch|None) is at or past the floor
    given for its minor release; an absent patch means the newest patch."""
    major, minor, patch = version
    floor = floors.get((major, minor))
    if floor is None:
        return (major, minor) > max(floors)
    return patch is None or patch >= floor


def relative_globs_follow_parent(version):
    return version[0] >= 2 or _at_least(version, {(1, 6): 29, (1, 7): 16})


def rejects_version_3(version):
    return version[0] == 1 and _at_least(version, {(1, 6): 32, (1, 7): 17})


def version_text(version):
    """1.6.20 for (1, 6, 20); a version as parse_version returns it, for messages."""
    return ".".join(str(p) for p in version if p is not None)


# ---------------------------------------------------------------- toml
def format_table_path(keys):
    """('plugins', 'io.containerd.grpc.v1.cri', 'containerd') ->
    plugins."io.containerd.grpc.v1.cri".containerd"""
    out = []
    for key in keys:
        if _BARE_KEY.match(key):
            out.append(key)
        else:
            out.append('"%s"' % key.replace("\\", "\\\\").replace('"', '\\"'))
    return ".".join(out)


def find_line(text, pattern):
    for number, line in enumerate(text.splitlines(), start=1):
        if re.search(pattern, line):
            return number, line
    return None, None


def check_unquoted_plugins(path, text, data, rejected=True):
    """Common mistake 1: [plugins.io.containerd.grpc.v1.cri...] unquoted - TOML reads it as the
    nested tables plugins -> io -> containerd -> ... Raises ConfigError (mistake
    "unquoted-dotted-table", with the line and the quoted fix) for the first such table of the
    parsed file `data` (text: the file's text, for the line). `rejected`: the containerd version
    refuses it (1.x); 2.x starts and ignores the settings. Public: the grader uses it."""
    plugins = data.get("plugins")
    if not isinstance(plugins, dict):
        return
    for key, value in plugins.items():
        if len(key.split(".")) >= 4 or not isinstance(value, dict):
            continue
        spelled = ".".join([key] + _first_path(value, 5))
        if not re.match(r"io\.containerd\.[A-Za-z0-9_-]+\.v[0-9]+\.", spelled):
            continue  # a short (version 1) plugin name such as plugins.cri
        line_no, line = find_line(
            text, r"^\s*\[\[?\s*plugins\s*\.\s*%s\s*[.\]]" % re.escape(key))
        if line_no is None:
            line_no, line = find_line(text, r"^\s*plugins\s*\.\s*%s\s*\." % re.escape(key))
        fixed = None
        if line:
            fixed = _UNQUOTED_PLUGIN.sub(r'plugins."\1"', line.strip())
            if fixed == line.strip():
                fixed = None
        nested = " -> ".join(["plugins", key] + _first_path(value, 4))
        raise ConfigError(
            "table %s has an unquoted dotted plugin name (common mistake 1): TOML "
            "reads it as nested tables %s, i.e. a plugin named %r, and %s."
            % ((line or "").strip() or "plugins." + key, nested, key,
               "containerd rejects it (invalid plugin key URI %r expect io.containerd.x.vx)" % key
               if rejected else "containerd 2.x starts anyway and silently ignores these "
                                "settings - no plugin is named %r" % key),
            path=path, line=line_no,
            fix=("quote the plugin name so it stays one key: %s" % fixed) if fixed else
            'quote the plugin name so it stays one key, e.g. [plugins."io.containerd.grpc.v1.cri"]',
            mistake="unquoted-dotted-table")


def _first_path(tree, limit):
    keys = []
    while isinstance(tree, dict) and tree and len(keys) < limit:
        key = next(iter(tree))
        keys.append(key)
        tree = tree[key]
    return keys


def load_toml(path):
    """Read and parse one file; errors name file, line and column."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise ConfigError("no such file", path=path,
                          fix="check the path (containerd: open %s: no such file or directory)" % path)
    except IsADirectoryError:
        raise ConfigError("is a directory, not a TOML file", path=path)
    except OSError as exc:
        raise ConfigError("cannot read: %s" % exc.strerror, path=path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError("not UTF-8 text (byte %d)" % exc.start, path=path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = re.search(r"\(at line (\d+), column (\d+)\)", message)
        line = column = None
        if match:
            line, column = int(match.group(1)), int(match.group(2))
            message = message[:match.start()].strip()
        source = ""
        if line and line <= len(text.splitlines()):
            source = " (line reads: %s)" % text.splitlines()[line - 1].strip()
        raise ConfigError("TOML syntax error: %s%s" % (message, source), path=path,
                          line=line, column=column,
                          fix="correct the TOML at that place; a table header is "
                              "[a.\"dotted.key\".b] on a line of its own")
    return text, data


def table_paths(data, prefix=()):
    """Every table path (tuple of keys) a parsed file defines."""
    out = set()
    for key, value in data.items():
        if isinstance(value, dict):
            path = prefix + (key,)
            out.add(path)
            out |= table_paths(value, path)
    return out


def get(data, *keys):
    """data[k1][k2]...: the value at that nested path of dicts, or None when a key is missing or
    a level is not a dict (never raises). Public: the grader reads trainee files with it."""
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def runtimes_in(data):
    """Runtime names a single parsed file defines directly, any CRI spelling."""
    names = set()
    plugins = data.get("plugins") if isinstance(data.get("plugins"), dict) else {}
    for key in (CRI_V1, CRI_V2, CRI_V3_RUNTIME):
        runtimes = get(plugins, key, "containerd", "runtimes")
        if isinstance(runtimes, dict):
            names |= {name for name, value in runtimes.items() if isinstance(value, dict)}
    return sorted(names)


# ---------------------------------------------------------------- loading
class LoadedFile:
    def __init__(self, path, text, data, imported_by=None):
        self.path = path
        self.text = text
        self.data = data
        self.imported_by = imported_by

    @property
    def version(self):
        value = self.data.get("version", 0)
        return value if isinstance(value, int) else 0


def under_root(path, root):
    """A node path as this machine sees it when the node's / is `root` (a lab folder, a copy
    of a node's /etc): absolute paths move under root, unless they already lie inside it."""
    if not root or root == "/" or not os.path.isabs(path):
        return path
    root = os.path.abspath(root)
    if path == root or path.startswith(root.rstrip("/") + "/"):
        return path
    return os.path.join(root, path.lstrip("/"))


def _expand(parent, pattern, version, working_dir, findings, root="/"):
    if os.path.isabs(pattern):
        pattern = under_root(pattern, root)
    if "*" in pattern:
        base = pattern
        if not os.path.isabs(pattern):
            if relative_globs_follow_parent(version):
                base = os.path.join(os.path.dirname(parent), pattern)
            else:
                base = os.path.join(under_root(working_dir, root), pattern)
                findings.append(
                    "import %r in %s is a relative glob: containerd %s resolves it "
                    "against the daemon's working directory (%s), not the file's folder "
                    "(fixed in 1.6.29 / 1.7.16 / 2.0); write an absolute path."
                    % (pattern, parent, ".".join(str(p) for p in version if p is not None),
                       working_dir))
        matches = sorted(_glob.glob(base))
        if not matches:
            findings.append(
                "import pattern %r in %s matched no file, so nothing was imported from it "
                "(containerd ignores an empty glob silently)%s."
                % (pattern, parent, _near_miss(base)))
        return matches
    path = os.path.normpath(pattern)
    if not os.path.isabs(path):
        path = os.path.join(os.path.dirname(parent), path)
    return [path]


def _near_miss(pattern):
    folder = os.path.dirname(pattern)
    hints = []
    parent = os.path.dirname(folder)
    if os.path.isdir(parent) and not os.path.isdir(folder):
        siblings = sorted(d for d in os.listdir(parent) if os.path.isdir(os.path.join(parent, d)))
        hints.append("folder %s does not exist (folders there: %s)"
                     % (folder, ", ".join(siblings) or "none"))
    elif os.path.isdir(folder):
        files = sorted(os.listdir(folder))
        if files:
            hints.append("%s holds %s" % (folder, ", ".join(files[:6])))
    return ": " + "; ".join(hints) if hints else ""


# ---------------------------------------------------------------- types
# Where containerd decodes a key into a Go type, a TOML value of another type stops it.
# Checked against both oracles (tests/containerd_corpus 30-37): 1.6.20 says "Can't convert
# X(type) to T", 2.2.0 "toml: cannot decode TOML <type> into struct field ..." or panics on
# a runtimes value that is not a table. Plugin options (runtimes.*.options) stay opaque:
# containerd passes them to the runtime and `config dump` accepts any value there.
_TOML_TYPE = {str: "string", bool: "boolean", int: "integer", float: "float", list: "array",
              dict: "table"}
_RUNTIME_KEYS = {"runtime_type": str, "runtime_path": str, "runtime_engine": str,
                 "runtime_root": str, "privileged_without_host_devices": bool,
                 "privileged_without_host_devices_all_devices_allowed": bool,
                 "base_runtime_spec": str, "cni_conf_dir": str, "cni_max_conf_num": int,
                 "snapshotter": str, "sandbox_mode": str, "sandboxer": str, "io_type": str,
                 "pod_annotations": list, "container_annotations": list, "options": dict}
_CONTAINERD_KEYS = {"default_runtime_name": str, "snapshotter": str, "no_pivot": bool,
                    "disable_snapshot_annotations": bool, "discard_unpacked_layers": bool,
                    "ignore_blockio_not_enabled_errors": bool,
                    "ignore_rdt_not_enabled_errors": bool, "runtimes": dict,
                    "default_runtime": dict, "untrusted_workload_runtime": dict}
_GO_TYPE = {str: ("string", "string"), bool: ("bool", "bool"), int: ("int", "int"),
            dict: ("a table", "map[string]toml.Tree(map)"), list: ("an array", "[]string(slice)")}


def _kind_of(value):
    return _TOML_TYPE.get(type(value), type(value).__name__)


def _type_error(path, text, table, key, value, want, version, what=None):
    dotted = format_table_path(list(table) + [key])
    line = find_line(text, r'^\s*"?%s"?\s*=' % re.escape(key))[0] if key else None
    if line is None and table:
        last = format_table_path(list(table) + [key]).rsplit(".", maxsplit=1)[-1]
        line = find_line(text, re.escape(last))[0]
    expected = what or {str: "a string", bool: "a boolean (true or false)", int: "an integer",
                        dict: "a table", list: "an array"}[want]
    shown = value if not isinstance(value, (dict, list)) else (
        "[%s]" % ", ".join(str(v) for v in value) if isinstance(value, list) else "{...}")
    go_field = {"version": ("config.Config.Version", "int"), "imports": ("config.Config.Imports", "[]string"),
                "plugins": ("config.Config.Plugins", "map[string]interface {}"),
                "default_runtime_name": ("config.ContainerdConfig.DefaultRuntimeName", "string"),
                "runtime_type": ("config.Runtime.Type", "string")}.get(key)
    go_type = {str: "string", int: "int", bool: "bool", list: "[]string(slice)",
               dict: "map[string]toml.Tree(map)"}[want]
    if key == "runtimes" or (table[-1:] == ("runtimes",)):
        go_type = "a slice" if isinstance(value, list) else "config.Runtime"
    if version[0] == 1:
        said = "Can't convert %s(%s) to %s" % (shown, {str: "string", int: "int64", float: "float64",
                                                       bool: "bool", list: "[]interface {}",
                                                       dict: "map"}.get(type(value), "?"), go_type)
    elif key == "runtimes" or table[-1:] == ("runtimes",):
        said = "panic: interface conversion: interface {} is %s, not map[string]interface {}" % (
            {list: "[]interface {}", str: "string", int: "int64", bool: "bool", float: "float64"}
            .get(type(value), "?"))
    elif go_field:
        said = "toml: cannot decode TOML %s into struct field %s of type %s" % (
            _kind_of(value), go_field[0], go_field[1])
    else:
        said = "toml: cannot decode TOML %s into a %s" % (_kind_of(value), go_type)
    fix = {str: 'write it as a quoted string, e.g. %s = "runc"' % key,
           bool: "write true or false, without quotes",
           int: "write a bare integer, e.g. version = 2",
           dict: "make it a table: [%s] on a line of its own, its keys below" % dotted,
           list: 'write an array, e.g. %s = ["/etc/containerd/conf.d/*.toml"]' % key}[want]
    text = "%s is %s (%s) where containerd expects %s; containerd %s refuses to start (\"%s\")" % (
        dotted or key, _kind_of(value), shown, expected, version_text(version), said)
    return ConfigError(text, path=path, line=line, fix=fix)


def check_types(path, text, data, version):
    """Raise ConfigError where containerd's own decoding of the file would fail."""
    for key, want in (("version", int), ("imports", list), ("plugins", dict), ("root", str),
                      ("state", str), ("oom_score", int), ("required_plugins", list),
                      ("disabled_plugins", list)):
        if key in data and not (isinstance(data[key], want) and not isinstance(data[key], bool)):
            raise _type_error(path, text, (), key, data[key], want, version,
                              "a list of file paths or globs" if key == "imports" else None)
    for item in data.get("imports", []):
        if not isinstance(item, str):
            raise _type_error(path, text, (), "imports", item, str, version,
                              "each import to be a string (a path or a glob)")
    plugins = data.get("plugins", {})
    for name in (CRI_V1, CRI_V2, CRI_V3_RUNTIME):
        if name not in plugins:
            continue
        table = ("plugins", name)
        cri = plugins[name]
        if not isinstance(cri, dict):
            raise _type_error(path, text, ("plugins",), name, cri, dict, version)
        ctd = cri.get("containerd")
        if ctd is None:
            continue
        if not isinstance(ctd, dict):
            raise _type_error(path, text, table, "containerd", ctd, dict, version)
        for key, want in _CONTAINERD_KEYS.items():
            if key in ctd and (not isinstance(ctd[key], want) or isinstance(ctd[key], bool) != (want is bool)):
                raise _type_error(path, text, table + ("containerd",), key, ctd[key], want, version,
                                  "a table of runtimes, one [..runtimes.<name>] table each"
                                  if key == "runtimes" else None)
        runtimes = dict(ctd.get("runtimes") or {})
        for key in ("default_runtime", "untrusted_workload_runtime"):
            if isinstance(ctd.get(key), dict):
                runtimes["<%s>" % key] = ctd[key]
        for runtime, spec in runtimes.items():
            where = table + ("containerd", "runtimes")
            if not isinstance(spec, dict):
                raise _type_error(path, text, where, runtime, spec, dict, version,
                                  "a table [..runtimes.%s] with runtime_type and options" % runtime)
            for key, want in _RUNTIME_KEYS.items():
                if key in spec and (not isinstance(spec[key], want) or
                                    isinstance(spec[key], bool) != (want is bool)):
                    raise _type_error(path, text, where + (runtime,), key, spec[key], want, version)


def load_all(path, version, working_dir="/", root="/"):
    """Load the main file and its imports breadth-first, as containerd does.

    Returns (files, findings); raises ConfigError where containerd would fail.
    """
    findings = []
    loaded = []
    seen = set()
    pending = [(path, None)]
    while pending:
        current, parent = pending.pop(0)
        if current in seen:
            continue
        try:
            text, data = load_toml(current)
        except ConfigError as exc:
            if parent is not None and exc.line is None:
                exc.message = "cannot load import (imported by %s): %s" % (parent, exc.message)
                exc.fix = ("create the file or remove it from imports in %s; a missing "
                           "non-glob import stops containerd (failed to load TOML)" % parent)
            raise
        check_types(current, text, data, version)
        try:
            check_unquoted_plugins(current, text, data, rejected=version[0] == 1)
        except ConfigError as exc:
            if version[0] == 1:
                raise
            findings.append(str(exc))  # 2.x starts with it (checked against 2.2.0's dump)
        entry = LoadedFile(current, text, data, parent)
        loaded.append(entry)
        seen.add(current)
        imports = data.get("imports", [])
        if not isinstance(imports, list) or not all(isinstance(i, str) for i in imports):
            line = find_line(text, r"^\s*imports\s*=")[0]
            raise ConfigError("imports must be an array of strings", path=current, line=line,
                              fix='write imports = ["/etc/containerd/conf.d/*.toml"]')
        for table, value in nested_imports(data):
            findings.append(
                "%s sets imports inside table [%s], not at the top level: containerd "
                "reads no imports from it (move `imports = %s` above the first table "
                "header)." % (current, format_table_path(table), value))
        for pattern in imports:
            for match in _expand(current, pattern, version, working_dir, findings, root):
                pending.append((match, current))
    return loaded, findings


def nested_imports(data, prefix=()):
    """(table path, imports) for every `imports` array inside a table of data - containerd reads
    imports only at the top level, so these are ignored. Public: the grader names them."""
    for key, value in data.items():
        if isinstance(value, dict):
            if "imports" in value and isinstance(value["imports"], list):
                yield prefix + (key,), value["imports"]
            yield from nested_imports(value, prefix + (key,))
