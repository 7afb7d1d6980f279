# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one collector of a GPU node: each of its commands run once, with one timeout.

:func:`collect` is what both node modules run on the node - gpu_bundle_node writes its result
as a support bundle's ``nodes/<node>/`` files (bundle.node_side), gpu_node_facts reads the same
result into node facts with the diagnosis's own parsers (node.gpu_facts, node.artefacts) -
so what gpu_node_facts reports is what gpu_diagnose reads from a bundle of that node.

It runs nvidia-smi (found by nvidia_smi.locate: PATH, or ``chroot <driver_root>``) - its table,
its GPU query and, when the table answered, its MIG listings -, ``crictl info``, ``containerd
config dump``, containerd's (and the kubelet's) log, the kernel log, Fabric Manager's unit
status, the device-plugin folder, the CDI specs (the spec folders ``cdi_spec_dirs`` names, else
those ``crictl info`` names, else CDI's own; read under ``host_root``) and the GPU device nodes of
the running containers (``crictl ps``, ``crictl inspect``) - these two as small summaries made
here (node/cdi.py), never the raw files. Each file has an index entry: ``collected``, ``missing``
(the tool or file is not there), ``failed`` (it ran and failed: its exit code and output kept) or
``skipped`` (not asked, or what it needs failed). Ansible-free; it writes nothing.

The option names (:data:`NODE_OPTIONS`) are the same in both modules; ``crictl_endpoint`` is
the old name of ``runtime_endpoint`` (gpu_bundle_node before 1.4.0).
"""

import glob
import json
import os

from ansible.module_utils.node import cdi as node_cdi
from ansible.module_utils.node import commands as node_commands
from ansible.module_utils.node import nvidia_smi
from ansible.module_utils.node.artefacts import (
    CDI_SPECS, CONTAINER_DEVICES, NODE_FILES, ArtefactError, parse_crictl_info)


COLLECTION = "gpu_incident.lab"
# an option's old name: accepted, with a deprecation warning, until this collection version
OLD_NAMES = {"runtime_endpoint": ["crictl_endpoint"]}
REMOVED_IN = "2.0.0"

# the options both node modules share: name -> argument spec (the modules override defaults)
NODE_OPTIONS = dict(
    crictl=dict(type="str", default="crictl"),
    runtime_endpoint=dict(type="str", default=""),
    containerd=dict(type="str", default="containerd"),
    containerd_config=dict(type="str", default=""),
    containerd_log=dict(type="str", default=""),
    containerd_unit=dict(type="str", default="containerd"),
    journalctl=dict(type="str", default="journalctl"),
    dmesg=dict(type="str", default="dmesg"),
    kernel_log=dict(type="str", default=""),
    systemctl=dict(type="str", default="systemctl"),
    fabric_manager=dict(type="str", default="always", choices=["auto", "always", "never"]),
    fabric_manager_unit=dict(type="str", default="nvidia-fabricmanager"),
    socket_dir=dict(type="str", default="/var/lib/kubelet/device-plugins"),
    cdi_spec_dirs=dict(type="list", elements="str", default=[]),
    host_root=dict(type="str", default="/"),
    max_bytes=dict(type="int", default=8 * 1024 * 1024),
    timeout=dict(type="int", default=60),
)
# what collect() assumes for an option not given (direct callers; the modules give them all)
DEFAULTS = dict({k: v["default"] for k, v in NODE_OPTIONS.items()},
                nvidia_smi="nvidia-smi", driver_root=nvidia_smi.DRIVER_ROOT,
                kubelet_log="", kubelet_unit="kubelet")


def argument_spec(**overrides):
    """NODE_OPTIONS as an AnsibleModule argument_spec, with the old names as deprecated aliases;
    `overrides`: {option: {key: value}} of one module (its defaults, types)."""
    spec = {}
    for name, base in NODE_OPTIONS.items():
        option = dict(base, **overrides.get(name, {}))
        if name in OLD_NAMES:
            option["aliases"] = list(OLD_NAMES[name])
            option["deprecated_aliases"] = [dict(name=old, version=REMOVED_IN, collection_name=COLLECTION)
                                            for old in OLD_NAMES[name]]
        spec[name] = option
    return spec


def nvswitch_present():
    """NVSwitches on this host (where Fabric Manager must run)."""
    return bool(glob.glob("/dev/nvidia-nvswitch*") or
                glob.glob("/proc/driver/nvidia-nvswitch/devices/*"))


def _tail(data, limit):
    if limit and len(data) > limit:
        cut = data[-limit:]
        return cut[cut.find(b"\n") + 1:] if b"\n" in cut else cut, True
    return data, False


def _text(data):
    return data.decode("utf-8", "replace").strip()[-2000:]


class _Collection(object):
    """One node's files, index and checks (each command run: command, rc, first lines)."""

    def __init__(self, options, names):
        self.o = options
        self.names = names
        self.files, self.index, self.checks = {}, {}, []

    def wanted(self, *names):
        return any(n in self.names for n in names)

    def run(self, argv, merge=False):
        """(rc, out, err) of argv, bounded by the timeout, noted in checks. rc None when it could
        not start or timed out (then err says why: 'ARGV gave no answer within N s')."""
        done = node_commands.run(argv, self.o["timeout"], merge=merge)
        shown = " ".join(argv)
        if done.timed_out:
            err = ("%s gave no answer within %s s" % (shown, self.o["timeout"])).encode()
            self.checks.append({"command": shown, "rc": "timeout", "output": _text(err)})
            return None, b"", err, True
        first = (done.out or done.err).decode("utf-8", "replace").strip().splitlines()[:3]
        self.checks.append({"command": shown, "rc": done.rc,
                            "output": first if done.rc is not None else _text(done.err)})
        return done.rc, done.out, done.err, False

    def record(self, name, argv, got, keep_on_failure=False, ok_rcs=(0,)):
        """Index entry (and file) of one command's result `got` (run()'s)."""
        rc, out, err, timed_out = got
        entry = {"command": " ".join(argv)}
        if rc is None:
            entry.update(status="failed", reason="could not run: " + _text(err))
            if timed_out:   # no answer is an answer: a hung nvidia-smi or CRI is the evidence
                entry["output"] = _text(err)
        elif rc in ok_rcs or keep_on_failure:
            entry.update(status="collected", rc=rc)
            self.keep(name, out, entry)
            if rc not in ok_rcs:
                entry["reason"] = "exit %s (kept: the command's words are the evidence)" % rc
        else:
            words = _text(err) or _text(out)
            entry.update(status="failed", rc=rc, output=_text(out + b"\n" + err),
                         reason="exit %s: %s" % (rc, words.splitlines()[0] if words else "no output"))
        self.index[name] = entry

    def keep(self, name, data, entry):
        """data's end (max_bytes) as the file `name`; `entry` says so (truncated_to_bytes)."""
        self.files[name], cut = _tail(data, self.o["max_bytes"])
        self.index[name] = entry
        if cut:
            entry["truncated_to_bytes"] = self.o["max_bytes"]

    def missing(self, name, reason, command=None):
        self.index[name] = {"status": "missing", "reason": reason}
        self.checks.append({"command": command or name, "rc": None, "output": "not found"
                            if command else reason})

    def read(self, name, path):
        """A file's end (max_bytes) as the artefact; missing when it cannot be read."""
        limit = self.o["max_bytes"]
        try:
            data = node_commands.read_tail(path, limit + 1 if limit else 0)
        except OSError as exc:
            self.missing(name, "cannot read %s: %s" % (path, exc.strerror or exc), "read %s" % path)
            return
        self.keep(name, data, {"status": "collected", "source": path})
        self.checks.append({"command": "read %s" % path, "rc": 0, "output": []})

    def tool(self, option):
        """The path of the command option `option` names, or None."""
        return node_commands.which(self.o[option])


def _nvidia_smi(c):
    o = c.o
    located = nvidia_smi.locate(o["nvidia_smi"], o["driver_root"])
    if located is None:
        why = "%s not installed (not on PATH, not under %s)" % (o["nvidia_smi"], o["driver_root"] or "-")
        for name in ("nvidia-smi.txt", "nvidia-smi-query.csv", "mig-lgip.txt", "mig-lgipp.txt"):
            c.index[name] = {"status": "missing", "reason": why}
        c.checks.append({"command": o["nvidia_smi"], "rc": None, "output": "not found (nor %s)" % os.path.join(
            o["driver_root"] or "-", "usr/bin/nvidia-smi")})
        return None
    smi = located[1]
    table = c.run(smi, merge=True)
    c.record("nvidia-smi.txt", smi, table, keep_on_failure=True)
    argv = smi + nvidia_smi.GPU_QUERY
    c.record("nvidia-smi-query.csv", argv, c.run(argv))
    for name, flag in (("mig-lgip.txt", "-lgip"), ("mig-lgipp.txt", "-lgipp")):
        if table[0] != 0:
            c.index[name] = {"status": "skipped", "reason": "nvidia-smi failed (exit %s)" % table[0]}
        elif c.wanted(name):
            argv = smi + ["mig", flag]
            c.record(name, argv, c.run(argv, merge=True))
    return located[0]


def _containerd(c):
    o = c.o
    crictl = c.tool("crictl")
    if crictl is None:
        c.missing("crictl-info.json", "%s not installed" % o["crictl"], o["crictl"])
    else:
        argv = [crictl] + (["--runtime-endpoint", o["runtime_endpoint"]] if o["runtime_endpoint"] else []) + ["info"]
        c.record("crictl-info.json", argv, c.run(argv))
    containerd = c.tool("containerd")
    if containerd is None:
        c.missing("containerd-config-dump.toml", "%s not installed" % o["containerd"], o["containerd"])
    else:
        argv = [containerd] + (["--config", o["containerd_config"]] if o["containerd_config"] else []) \
            + ["config", "dump"]
        c.record("containerd-config-dump.toml", argv, c.run(argv))


def _logs(c):
    o = c.o
    journalctl = c.tool("journalctl")
    for name, path, unit in (("containerd.log", o["containerd_log"], o["containerd_unit"]),
                             ("kubelet.log", o["kubelet_log"], o["kubelet_unit"])):
        if not c.wanted(name):
            continue
        if path:
            c.read(name, path)
        elif unit and journalctl:
            argv = [journalctl, "-u", unit, "-b", "--no-pager", "-o", "short-iso"]
            got = c.run(argv)
            if got[0] == 0 and (b"-- No entries --" in got[1] or not got[1].strip()):
                c.missing(name, "journalctl has no entries for unit %s in this boot" % unit)
            else:
                c.record(name, argv, got)
        else:
            c.missing(name, "no log path given and no journalctl" if unit else "no log path or unit given")


def _kernel(c):
    o = c.o
    if o["kernel_log"]:
        c.read("dmesg.txt", o["kernel_log"])
        return
    dmesg, journalctl = c.tool("dmesg"), c.tool("journalctl")
    first = None
    if dmesg:
        got = c.run([dmesg])
        if got[0] == 0:
            c.record("dmesg.txt", [dmesg], got)
            return
        first = {"command": dmesg, "rc": got[0], "output": _text(got[2] or got[1])}
    if journalctl:
        argv = [journalctl, "-k", "-b", "--no-pager"]
        c.record("dmesg.txt", argv, c.run(argv))
        if first:
            c.index["dmesg.txt"]["dmesg"] = first
    elif first:
        c.index["dmesg.txt"] = dict(first, status="failed", reason="dmesg: " + first["output"])
    else:
        c.missing("dmesg.txt", "neither %s nor %s installed" % (o["dmesg"], o["journalctl"]))


def _sockets(c):
    folder = c.o["socket_dir"]
    if not os.path.isdir(folder):
        c.missing("device-plugins.txt", "no folder %s (no kubelet device-plugin folder here)" % folder,
                  "ls -1 %s" % folder)
        c.checks[-1]["output"] = "no such folder"
        return
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        c.index["device-plugins.txt"] = {"status": "failed", "reason": "ls %s: %s" % (folder, exc.strerror)}
        c.checks.append({"command": "ls -1 %s" % folder, "rc": None, "output": exc.strerror or str(exc)})
        return
    c.files["device-plugins.txt"] = "".join(n + "\n" for n in names).encode()
    c.index["device-plugins.txt"] = {"status": "collected", "command": "ls -1 " + folder}
    c.checks.append({"command": "ls -1 %s" % folder, "rc": 0, "output": names[:10]})


def _fabric_manager(c):
    o = c.o
    name, unit = "fabric-manager.txt", o["fabric_manager_unit"]
    nvswitch = nvswitch_present() if o["fabric_manager"] != "never" else False
    if o["fabric_manager"] == "never" or (o["fabric_manager"] == "auto" and not nvswitch):
        c.index[name] = {"status": "skipped", "reason": "fabric_manager=never" if o["fabric_manager"] == "never"
                         else "no NVSwitch here (fabric_manager=auto): Fabric Manager is not needed"}
        return
    systemctl = c.tool("systemctl")
    if systemctl is None:
        c.missing(name, "no systemctl here", o["systemctl"])
        return
    argv = [systemctl, "status", "--no-pager", unit]
    got = c.run(argv, merge=True)
    rc, out = got[0], got[1]
    if (rc == 4 or (rc is not None and b"could not be found" in out)) and not nvswitch:
        c.missing(name, "unit %s not installed (systemctl status: exit %s)" % (unit, rc))
    else:
        # 0 active, 3 not running (inactive or failed), 4 not installed on an NVSwitch system:
        # the unit's status text is the evidence; anything else (1: no systemd to ask) says
        # nothing about the unit
        c.record(name, argv, got, ok_rcs=(0, 3, 4) if nvswitch else (0, 3))


def _spec_dirs(c):
    """The CDI spec folders to read: the option's, else those the running containerd names
    (crictl info .config.cdiSpecDirs), else CDI's own defaults."""
    if c.o["cdi_spec_dirs"]:
        return list(c.o["cdi_spec_dirs"]), "cdi_spec_dirs"
    info = c.files.get("crictl-info.json")
    if info:
        try:
            named = parse_crictl_info(info.decode("utf-8", "replace")).get("cdi_spec_dirs")
        except ArtefactError:
            named = None
        if named:
            return named, "crictl info .config.cdiSpecDirs"
    return list(node_cdi.DEFAULT_SPEC_DIRS), "CDI's defaults"


def _cdi_specs(c):
    dirs, whence = _spec_dirs(c)
    root = c.o["host_root"] or "/"
    summary = node_cdi.read_specs(dirs, root)
    shown = "read %s/*.json|*.yaml (%s)%s" % (
        ", ".join(dirs), whence, " under %s" % root if root != "/" else "")
    if all(d["state"] == "absent" for d in summary["dirs"]):
        c.missing(CDI_SPECS, "no CDI spec folder here: %s (%s)%s" % (
            ", ".join(dirs), whence, " under %s" % root if root != "/" else ""), shown)
        return
    c.files[CDI_SPECS] = (json.dumps(summary, indent=1, sort_keys=True) + "\n").encode()
    c.index[CDI_SPECS] = {"status": "collected", "command": shown}
    c.checks.append({"command": shown, "rc": 0, "output": ["%s: %s" % (d["dir"], d["state"]) for d in summary["dirs"]]})


def _inspect(c, base, ids):
    """The statuses of ``crictl inspect -o json IDS``, or None when it failed."""
    rc, out, _err, _timed_out = c.run(base + ["inspect", "-o", "json"] + ids)
    if rc != 0:
        return None
    try:
        return node_cdi.inspected(out.decode("utf-8", "replace"))
    except ValueError:
        return None


def _container_devices(c):
    """The GPU device nodes and CDI devices of the running containers: ``crictl ps -o json``, then
    ``crictl inspect -o json`` of at most node_cdi.MAX_CONTAINERS ids, INSPECT_CHUNK a call (one
    by one again when a call fails: a container may end between the two)."""
    o, name = c.o, CONTAINER_DEVICES
    crictl = c.tool("crictl")
    if crictl is None:
        c.index[name] = {"status": "missing", "reason": "%s not installed" % o["crictl"]}
        return
    base = [crictl] + (["--runtime-endpoint", o["runtime_endpoint"]] if o["runtime_endpoint"] else [])
    argv = base + ["ps", "-o", "json"]
    got = c.run(argv)
    if got[0] != 0:
        c.record(name, argv, got)
        return
    try:
        ids = node_cdi.running_ids(got[1].decode("utf-8", "replace"))
    except ValueError as exc:
        # no output kept: crictl's JSON carries the containers' labels and annotations (never raw here)
        c.index[name] = {"status": "failed", "command": " ".join(argv), "rc": 0,
                         "reason": "crictl ps -o json gave no container list (%s)" % str(exc)[:120]}
        return
    docs, vanished = [], 0
    wanted = ids[:node_cdi.MAX_CONTAINERS]
    for start in range(0, len(wanted), node_cdi.INSPECT_CHUNK):
        chunk = wanted[start:start + node_cdi.INSPECT_CHUNK]
        found = _inspect(c, base, chunk)
        if found is None and len(chunk) > 1:
            found = []
            for one in chunk:
                alone = _inspect(c, base, [one])
                vanished += alone is None
                found += alone or []
        elif found is None:
            vanished += 1
        docs += found or []
    summary = node_cdi.containers_summary(docs, left_out=len(ids) - len(wanted), vanished=vanished)
    c.files[name] = (json.dumps(summary, indent=1, sort_keys=True) + "\n").encode()
    c.index[name] = {"status": "collected", "command": " ".join(base + ["ps", "-o", "json"]) + "; crictl inspect -o json ID..."}


def collect(options, names=NODE_FILES):
    """This node's artefacts: {'files': {name: bytes}, 'index': {name: entry}, 'checks': [{command,
    rc, output}], 'nvidia_smi': nvidia-smi's argv as typed (``chroot DRIVER_ROOT nvidia-smi``)
    or None}. `options`: the modules' shared options (DEFAULTS for those not given); `names`:
    the files wanted (gpu_node_facts leaves out kubelet.log, which no fact reads)."""
    c = _Collection(dict(DEFAULTS, **{k: v for k, v in options.items() if v is not None}), names)
    typed = None
    if c.wanted("nvidia-smi.txt", "nvidia-smi-query.csv", "mig-lgip.txt", "mig-lgipp.txt"):
        typed = _nvidia_smi(c)
    if c.wanted("crictl-info.json", "containerd-config-dump.toml"):
        _containerd(c)
    if c.wanted(CDI_SPECS):
        _cdi_specs(c)
    if c.wanted(CONTAINER_DEVICES):
        _container_devices(c)
    _logs(c)
    if c.wanted("device-plugins.txt"):
        _sockets(c)
    if c.wanted("dmesg.txt"):
        _kernel(c)
    if c.wanted("fabric-manager.txt"):
        _fabric_manager(c)
    keep = set(names)
    return {"files": {k: v for k, v in c.files.items() if k in keep},
            "index": {k: v for k, v in c.index.items() if k in keep},
            "checks": c.checks, "nvidia_smi": typed}
