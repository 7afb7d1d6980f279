# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A support bundle's node half (gpu_bundle_node): the node's commands and logs collected with a
timeout each, redacted here on the node before they travel."""

import base64
import os

from ansible.module_utils.bundle.contents import redactor
from ansible.module_utils.node import commands as node_commands
from ansible.module_utils.node import nvidia_smi


def _tail(data, limit):
    if limit and len(data) > limit:
        cut = data[-limit:]
        return cut[cut.find(b"\n") + 1:] if b"\n" in cut else cut, True
    return data, False


def collect_node(options):
    """{'files': {name: bytes}, 'index': {name: entry}} of this node (names as in NODE_FILES)."""
    files, index = {}, {}
    timeout, limit = options["timeout"], options["max_bytes"]

    def text(out):
        return out.decode("utf-8", "replace").strip()[-2000:]

    def record(name, argv, rc, out, err, keep_on_failure=False, ok_rcs=(0,)):
        entry = {"command": " ".join(argv)}
        if rc is None:
            entry.update(status="failed", reason="could not run: " + text(err))
        elif rc in ok_rcs or keep_on_failure:
            data, cut = _tail(out, limit)
            files[name] = data
            entry.update(status="collected", rc=rc)
            if cut:
                entry["truncated_to_bytes"] = limit
            if rc not in ok_rcs:
                entry["reason"] = "exit %s (kept: the command's words are the evidence)" % rc
        else:
            entry.update(status="failed", rc=rc, output=text(out + b"\n" + err),
                         reason="exit %s: %s" % (rc, (text(err) or text(out)).splitlines()[0]
                                                 if (text(err) or text(out)) else "no output"))
        index[name] = entry

    def missing(name, reason):
        index[name] = {"status": "missing", "reason": reason}

    # nvidia-smi: PATH, or the GPU Operator's driver root (chroot)
    located = nvidia_smi.locate(options["nvidia_smi"], options["driver_root"])
    smi = located[1] if located else None
    if smi is None:
        why = "%s not installed (not on PATH, not under %s)" % (options["nvidia_smi"], options["driver_root"] or "-")
        for name in ("nvidia-smi.txt", "nvidia-smi-query.csv", "mig-lgip.txt", "mig-lgipp.txt"):
            missing(name, why)
    else:
        rc, out, err = node_commands.run(smi, timeout, merge=True)[:3]
        record("nvidia-smi.txt", smi, rc, out, err, keep_on_failure=True)
        argv = smi + nvidia_smi.GPU_QUERY
        record("nvidia-smi-query.csv", argv, *node_commands.run(argv, timeout)[:3])
        if rc == 0:
            for name, flag in (("mig-lgip.txt", "-lgip"), ("mig-lgipp.txt", "-lgipp")):
                argv = smi + ["mig", flag]
                record(name, argv, *node_commands.run(argv, timeout, merge=True)[:3])
        else:
            for name in ("mig-lgip.txt", "mig-lgipp.txt"):
                index[name] = {"status": "skipped", "reason": "nvidia-smi failed (exit %s)" % rc}

    crictl = node_commands.which(options["crictl"])
    if crictl is None:
        missing("crictl-info.json", "%s not installed" % options["crictl"])
    else:
        argv = [crictl] + (["--runtime-endpoint", options["crictl_endpoint"]] if options["crictl_endpoint"] else []) \
            + ["info"]
        record("crictl-info.json", argv, *node_commands.run(argv, timeout)[:3])

    containerd = node_commands.which(options["containerd"])
    if containerd is None:
        missing("containerd-config-dump.toml", "%s not installed" % options["containerd"])
    else:
        argv = [containerd] + (["--config", options["containerd_config"]] if options["containerd_config"] else []) \
            + ["config", "dump"]
        record("containerd-config-dump.toml", argv, *node_commands.run(argv, timeout)[:3])

    journalctl = node_commands.which("journalctl")
    for name, path, unit in (("containerd.log", options["containerd_log"], options["containerd_unit"]),
                             ("kubelet.log", options["kubelet_log"], options["kubelet_unit"])):
        if path:
            try:
                data = node_commands.read_tail(path, limit + 1 if limit else 0)
            except OSError as exc:
                missing(name, "cannot read %s: %s" % (path, exc.strerror or exc))
                continue
            files[name], cut = _tail(data, limit)
            index[name] = {"status": "collected", "source": path}
            if cut:
                index[name]["truncated_to_bytes"] = limit
        elif unit and journalctl:
            argv = [journalctl, "-u", unit, "-b", "--no-pager", "-o", "short-iso"]
            rc, out, err = node_commands.run(argv, timeout)[:3]
            if rc == 0 and (b"-- No entries --" in out or not out.strip()):
                missing(name, "journalctl has no entries for unit %s in this boot" % unit)
            else:
                record(name, argv, rc, out, err)
        else:
            missing(name, "no log path given and no journalctl" if unit else "no log path or unit given")

    folder = options["socket_dir"]
    if os.path.isdir(folder):
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            index["device-plugins.txt"] = {"status": "failed", "reason": "ls %s: %s" % (folder, exc.strerror)}
        else:
            files["device-plugins.txt"] = "".join(n + "\n" for n in names).encode()
            index["device-plugins.txt"] = {"status": "collected", "command": "ls -1 " + folder}
    else:
        missing("device-plugins.txt", "no folder %s (no kubelet device-plugin folder here)" % folder)

    dmesg = node_commands.which("dmesg")
    done = False
    if dmesg:
        rc, out, err = node_commands.run([dmesg], timeout)[:3]
        if rc == 0:
            record("dmesg.txt", [dmesg], rc, out, err)
            done = True
        else:
            first = {"command": dmesg, "rc": rc, "output": text(err or out)}
    if not done and journalctl:
        argv = [journalctl, "-k", "-b", "--no-pager"]
        record("dmesg.txt", argv, *node_commands.run(argv, timeout)[:3])
        if dmesg:
            index["dmesg.txt"]["dmesg"] = first
    elif not done:
        if dmesg:
            index["dmesg.txt"] = dict(first, status="failed", reason="dmesg: " + first["output"])
        else:
            missing("dmesg.txt", "neither dmesg nor journalctl installed")

    systemctl = node_commands.which("systemctl")
    if systemctl is None:
        missing("fabric-manager.txt", "no systemctl here")
    else:
        argv = [systemctl, "status", "--no-pager", options["fabric_manager_unit"]]
        rc, out, err = node_commands.run(argv, timeout, merge=True)[:3]
        if rc == 4 or (rc is not None and b"could not be found" in out):
            missing("fabric-manager.txt", "unit %s not installed (systemctl status: exit %s)"
                    % (options["fabric_manager_unit"], rc))
        else:
            # 0 active, 3 not running (inactive or failed): the unit's status text is the evidence
            # either way; anything else (1: no systemd to ask) says nothing about the unit
            record("fabric-manager.txt", argv, rc, out, err, ok_rcs=(0, 3))
    return {"files": files, "index": index}


def node_result(options):
    """gpu_bundle_node's result: this node's index and files (base64, to travel as JSON), both
    redacted here on the node, and what was hidden (redactions: files {name: {rule: n}}, index)."""
    engine = redactor(options)
    found = collect_node(options)
    node = options.get("node_name") or ""
    report = {"files": {}, "index": {}}
    files = {}
    for name, data in sorted(found["files"].items()):
        files[name], counts, note = engine.file("nodes/%s/%s" % (node, name) if node else name, data)
        if counts:
            report["files"][name] = counts
        if note:
            found["index"][name]["redaction_note"] = note

    def hit(rule, count=1):
        report["index"][rule] = report["index"].get(rule, 0) + count

    index = engine.json_doc(found["index"], hit, "bundle.json")
    return {"changed": False, "index": index, "redactions": report,
            "files": {k: base64.b64encode(v).decode("ascii") for k, v in files.items()}}
