# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The live node side of the diagnosis: run the node's commands, read them as node facts.

:func:`gather` runs on the GPU node (module gpu_node_facts over SSH): nvidia-smi (on PATH or
``chroot <driver_root> nvidia-smi``, nvidia_smi.locate), ``crictl info``, ``containerd config
dump``, containerd's and the kernel's log, Fabric Manager's state where NVSwitches exist, the
kubelet's device-plugin folder - and hands the raw texts to artefacts.facts_from_artefacts,
the same parsers a support bundle's ``nodes/<node>/`` files go through.
"""

import glob
import os

from ansible.module_utils.node import nvidia_smi
from ansible.module_utils.diagnosis.artefacts import ArtefactError, facts_from_artefacts
from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.node.commands import Runner


class NodeFactsError(LabError):
    """The node's outputs cannot be read into facts; ``checks`` says what was run."""

    def __init__(self, message, checks):
        super().__init__(message)
        self.checks = checks


def nvswitch_present():
    return bool(glob.glob("/dev/nvidia-nvswitch*") or
                glob.glob("/proc/driver/nvidia-nvswitch/devices/*"))


def _nvidia_smi(runner, p, files):
    """Run nvidia-smi's query (and its table, MIG listings): (argv as typed or None, its rc)."""
    located = nvidia_smi.locate(p["nvidia_smi"], p["driver_root"])
    if located is None:
        runner.note(p["nvidia_smi"], None, "not found (nor %s)"
                    % os.path.join(p["driver_root"], "usr/bin/nvidia-smi"))
        return None, None
    smi = located[0]
    got = runner.run(smi + nvidia_smi.GPU_QUERY)
    if got is None:
        return smi, None
    rc, out, err = got
    files["nvidia-smi-query.csv"] = out if rc == 0 else (out + err) or "exit status %s" % rc
    plain = runner.run(smi)
    if plain is not None:
        files["nvidia-smi.txt"] = plain[1] + plain[2]
    if rc == 0:
        for flag, name in (("-lgip", "mig-lgip.txt"), ("-lgipp", "mig-lgipp.txt")):
            mig = runner.run(smi + ["mig", flag])
            if mig is not None and mig[0] == 0:
                files[name] = mig[1]
    return smi, rc if rc != "timeout" else 1


def _first_ok(runner, argvs):
    """stdout of the first argv that runs and exits 0, or None."""
    for argv in argvs:
        got = runner.run(argv)
        if got is not None and got[0] == 0:
            return got[1]
    return None


def _containerd(runner, p, files):
    crictl = runner.run([p["crictl"], "--runtime-endpoint", p["runtime_endpoint"], "info"])
    if crictl is not None:
        rc, out, err = crictl
        files["crictl-info.json"] = out if rc == 0 else (err or out or "crictl info: exit %s" % rc)
    dump = _first_ok(runner, [[p["containerd"]] + (["--config", p["containerd_config"]]
                                                   if p["containerd_config"] else []) + ["config", "dump"]])
    if dump is not None:
        files["containerd-config-dump.toml"] = dump
    if p["containerd_log"]:
        text = runner.read(p["containerd_log"], 1024 * 1024)
        if text is not None:
            files["containerd.log"] = text
            runner.note("read %s" % p["containerd_log"], 0, [])
    else:
        journal = _first_ok(runner, [[p["journalctl"], "-u", "containerd", "-n", "200", "--no-pager"]])
        if journal is not None:
            files["containerd.log"] = journal


def _kernel_and_sockets(runner, p, files):
    if p["kernel_log"]:
        text = runner.read(p["kernel_log"])
        if text is not None:
            files["dmesg.txt"] = text
    else:
        kernel = _first_ok(runner, [[p["dmesg"]], [p["journalctl"], "-k", "-n", "5000", "--no-pager"]])
        if kernel is not None:
            files["dmesg.txt"] = kernel
    if p["fabric_manager"] == "always" or (p["fabric_manager"] == "auto" and nvswitch_present()):
        state = _first_ok(runner, [[p["systemctl"], "show", "-p", "LoadState", "-p", "ActiveState",
                                    "nvidia-fabricmanager"]])
        if state is not None:
            files["fabric-manager.txt"] = state
    shown = "ls -1 %s" % p["socket_dir"]
    if not os.path.isdir(p["socket_dir"]):
        runner.note(shown, None, "no such folder")
        return
    try:
        names = sorted(os.listdir(p["socket_dir"]))
    except OSError as exc:
        runner.note(shown, None, exc.strerror or str(exc))
        return
    files["device-plugins.txt"] = "\n".join(names) + ("\n" if names else "")
    runner.note(shown, 0, names[:10])


def gather(p):
    """(node facts, raw artefacts {name: text}, checks) of this node, from gpu_node_facts'
    options `p`. An output no parser can read is reported in checks and left out (its keys
    stay unknown), never guessed at; NodeFactsError when that is not possible."""
    runner = Runner(p["timeout"])
    files = {}
    smi, smi_rc = _nvidia_smi(runner, p, files)
    _containerd(runner, p, files)
    _kernel_and_sockets(runner, p, files)
    while True:
        try:
            facts = facts_from_artefacts(files, smi_rc=smi_rc, resources=p["resource"])
            break
        except ArtefactError as exc:
            name = next((n for n in list(files) if exc.message.startswith(n)), None)
            if name is None:
                raise NodeFactsError("on this node: %s" % exc.message, runner.checks)
            runner.note("read %s" % name, None, exc.message)
            files.pop(name)
    if smi and "driver_ok" in facts:
        facts["nvidia_smi"] = " ".join(smi)
    return facts, files, runner.checks
