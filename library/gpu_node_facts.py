#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: what a GPU node itself shows - driver, GPUs, running and configured
containerd runtimes, CDI, kernel Xid lines, Fabric Manager, the plugin socket."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_node_facts
short_description: Read a GPU node's driver, GPUs, running containerd config, kernel Xids and plugin socket
description:
  - Runs on the node (over SSH) and returns, as RV(node_facts), what only the node can tell.
    M(gpu_diagnose) takes it as its C(node_facts) (one dict per node name). The raw outputs
    are read by the same parsers a support bundle's C(nodes/<node>/) files go through, so a
    live node and a bundle give the same facts.
  - C(nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv,noheader)
    (C(driver_ok), C(driver_version), C(gpus), C(driver_error) with nvidia-smi's own
    words when it fails). When nvidia-smi is not on PATH and
    C(DRIVER_ROOT/usr/bin/nvidia-smi) exists (the GPU Operator's driver container), it is run
    as C(chroot DRIVER_ROOT nvidia-smi), as the Operator does.
  - C(crictl --runtime-endpoint ENDPOINT info) - the RUNNING daemon's CRI config
    (C(runtimes_running), C(default_runtime), C(cdi_enabled), C(cdi_spec_dirs)), or its error
    (C(cri_error)); C(containerd [--config F] config dump) - what the files make the NEXT start
    load (C(runtimes_configured), C(default_runtime_configured)); C(restart_pending) when both
    are known and differ.
  - The kernel log's NVRM lines (C(kernel_xid)), Fabric Manager's state where NVSwitches exist
    (C(fabric_manager)), the plugin's C(nvidia-<resource>.sock) names
    (C(device_plugin_sockets)), containerd's error lines (C(containerd_errors)), and the raw
    C(nvidia-smi mig -lgip)/C(-lgipp) text on MIG nodes.
  - A tool that is not installed is not a failure - its keys are left out, and the diagnosis
    says C(unknown)/C(skipped). A tool that runs and fails is reported with its output
    (C(driver_ok=false) with C(driver_error); C(cri_error)).
  - Only reads.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
options:
  nvidia_smi:
    description: The nvidia-smi command (name on PATH or a path).
    type: str
    default: nvidia-smi
  driver_root:
    description: The GPU Operator's driver root - used (by chroot) when O(nvidia_smi) is not found.
    type: path
    default: /run/nvidia/driver
  crictl:
    description: The crictl command (name on PATH or a path).
    type: str
    default: crictl
  runtime_endpoint:
    description: The CRI endpoint for C(crictl --runtime-endpoint) (k3s - C(unix:///run/k3s/containerd/containerd.sock)).
    type: str
    default: unix:///run/containerd/containerd.sock
  containerd:
    description: The containerd command (name on PATH or a path).
    type: str
    default: containerd
  containerd_config:
    description: Main config file for C(containerd --config FILE config dump); containerd's default when omitted.
    type: path
  containerd_log:
    description:
      - A file with containerd's log. Without it, C(journalctl -u containerd -n 200) is read
        when O(journalctl) exists.
    type: path
  journalctl:
    description: The journalctl command (containerd's log, and the kernel log when dmesg cannot be read).
    type: str
    default: journalctl
  dmesg:
    description: The dmesg command.
    type: str
    default: dmesg
  kernel_log:
    description: A file with the kernel log to read instead of running O(dmesg).
    type: path
  systemctl:
    description: The systemctl command (Fabric Manager's state).
    type: str
    default: systemctl
  fabric_manager:
    description:
      - When to ask for Fabric Manager - C(auto) when NVSwitches exist (C(/dev/nvidia-nvswitch*)
        or C(/proc/driver/nvidia-nvswitch/devices/*)), C(always), C(never).
    type: str
    choices: [auto, always, never]
    default: auto
  socket_dir:
    description: The kubelet's device-plugin folder.
    type: path
    default: /var/lib/kubelet/device-plugins
  resource:
    description:
      - Resource names whose C(nvidia-<resource>.sock) counts (C(gpu), C(mig-1g.10gb), or with
        the C(nvidia.com/) prefix); any C(nvidia-*.sock) when omitted.
    type: list
    elements: str
  timeout:
    description: Seconds each command may take.
    type: int
    default: 20
attributes:
  check_mode:
    description: Can run in check mode and report what would change without changing it.
    support: full
  diff_mode:
    description: Returns details on what changed (or would change in check mode) with --diff.
    support: none
"""

EXAMPLES = r"""
- name: What the GPU nodes show
  hosts: gpu_nodes
  become: true
  tasks:
    - name: Read driver, runtimes, kernel, socket
      gpu_node_facts:
      register: node_side

- name: On a k3s node with the GPU Operator's driver container
  gpu_node_facts:
    runtime_endpoint: unix:///run/k3s/containerd/containerd.sock
    containerd_config: /var/lib/rancher/k3s/agent/etc/containerd/config.toml
    driver_root: /run/nvidia/driver
"""

RETURN = r"""
node_facts:
  description:
    - The contract's keys, each only when it could be read - driver_ok, driver_version,
      driver_error, nvidia_smi, gpus, runtimes_running (and its old name runtimes_loaded),
      runtimes_configured, restart_pending, default_runtime, default_runtime_configured,
      cdi_enabled, cdi_spec_dirs, cri_error, containerd_errors, kernel_xid, fabric_manager,
      device_plugin_sockets, device_plugin_socket, mig_lgip, mig_lgipp, runtime_binaries.
  returned: success
  type: dict
artefacts:
  description: The raw outputs, keyed by the support bundle's nodes/<node>/ file names (what a bundle of this node would hold).
  returned: success
  type: dict
checks:
  description: What was run and what it gave, per check (command, rc or null when not installed, first lines of output).
  returned: success
  type: list
  elements: dict
"""

import glob  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.gpu_diagnosis.artefacts import ArtefactError, facts_from_artefacts  # noqa: E402

QUERY = ["--query-gpu=index,name,uuid,driver_version,memory.total", "--format=csv,noheader"]


class Runner(object):
    def __init__(self, module, timeout):
        self.module = module
        self.timeout = timeout
        self.checks = []

    def find(self, command):
        if os.sep in command:
            return command if os.access(command, os.X_OK) and os.path.isfile(command) else None
        return self.module.get_bin_path(command)

    def run(self, argv, shown=None):
        """(rc, stdout, stderr), or None when the command is not installed."""
        path = self.find(argv[0])
        shown = shown or " ".join(argv)
        if not path:
            self.checks.append({"command": shown, "rc": None, "output": "not found"})
            return None
        try:
            done = subprocess.run([path] + argv[1:], capture_output=True, timeout=self.timeout,
                                  check=False)
        except subprocess.TimeoutExpired:
            self.checks.append({"command": shown, "rc": "timeout",
                                "output": "no answer within %ss" % self.timeout})
            return ("timeout", "", "%s gave no answer within %ss" % (shown, self.timeout))
        except OSError as exc:
            self.checks.append({"command": shown, "rc": None, "output": str(exc)})
            return None
        out = done.stdout.decode("utf-8", "replace")
        err = done.stderr.decode("utf-8", "replace")
        self.checks.append({"command": shown, "rc": done.returncode,
                            "output": (out or err).strip().splitlines()[:3]})
        return done.returncode, out, err


def nvidia_smi_command(runner, p):
    """The argv prefix that runs nvidia-smi here, or None when it is not installed."""
    if runner.find(p["nvidia_smi"]):
        return [p["nvidia_smi"]]
    inside = os.path.join(p["driver_root"], "usr/bin/nvidia-smi")
    if os.sep not in p["nvidia_smi"] and os.path.isfile(inside) and runner.find("chroot"):
        return ["chroot", p["driver_root"], "nvidia-smi"]
    runner.checks.append({"command": p["nvidia_smi"], "rc": None,
                          "output": "not found (nor %s)" % inside})
    return None


def nvswitch_present():
    return bool(glob.glob("/dev/nvidia-nvswitch*") or
                glob.glob("/proc/driver/nvidia-nvswitch/devices/*"))


def gather(module, p):
    runner = Runner(module, p["timeout"])
    files = {}
    smi_rc = None
    smi = nvidia_smi_command(runner, p)
    if smi:
        got = runner.run(smi + QUERY)
        if got is not None:
            rc, out, err = got
            smi_rc = rc if rc != "timeout" else 1
            files["nvidia-smi-query.csv"] = out if rc == 0 else (out + err) or "exit status %s" % rc
            plain = runner.run(smi)
            if plain is not None:
                files["nvidia-smi.txt"] = plain[1] + plain[2]
            if rc == 0:
                for flag, name in (("-lgip", "mig-lgip.txt"), ("-lgipp", "mig-lgipp.txt")):
                    mig = runner.run(smi + ["mig", flag])
                    if mig is not None and mig[0] == 0:
                        files[name] = mig[1]
    crictl = runner.run([p["crictl"], "--runtime-endpoint", p["runtime_endpoint"], "info"])
    if crictl is not None:
        rc, out, err = crictl
        files["crictl-info.json"] = out if rc == 0 else (err or out or "crictl info: exit %s" % rc)
    dump_cmd = [p["containerd"]] + (["--config", p["containerd_config"]]
                                    if p["containerd_config"] else []) + ["config", "dump"]
    dump = runner.run(dump_cmd)
    if dump is not None and dump[0] == 0:
        files["containerd-config-dump.toml"] = dump[1]
    if p["containerd_log"]:
        try:
            with open(p["containerd_log"], "rb") as handle:
                handle.seek(0, 2)
                handle.seek(max(0, handle.tell() - 1024 * 1024))
                files["containerd.log"] = handle.read().decode("utf-8", "replace")
            runner.checks.append({"command": "read %s" % p["containerd_log"], "rc": 0, "output": []})
        except OSError as exc:
            runner.checks.append({"command": "read %s" % p["containerd_log"], "rc": None,
                                  "output": exc.strerror or str(exc)})
    else:
        journal = runner.run([p["journalctl"], "-u", "containerd", "-n", "200", "--no-pager"])
        if journal is not None and journal[0] == 0:
            files["containerd.log"] = journal[1]
    if p["kernel_log"]:
        try:
            with open(p["kernel_log"], encoding="utf-8", errors="replace") as handle:
                files["dmesg.txt"] = handle.read()
        except OSError as exc:
            runner.checks.append({"command": "read %s" % p["kernel_log"], "rc": None,
                                  "output": exc.strerror or str(exc)})
    else:
        kernel = runner.run([p["dmesg"]])
        if kernel is not None and kernel[0] == 0:
            files["dmesg.txt"] = kernel[1]
        else:
            kernel = runner.run([p["journalctl"], "-k", "-n", "5000", "--no-pager"])
            if kernel is not None and kernel[0] == 0:
                files["dmesg.txt"] = kernel[1]
    if p["fabric_manager"] == "always" or (p["fabric_manager"] == "auto" and nvswitch_present()):
        state = runner.run([p["systemctl"], "show", "-p", "LoadState", "-p", "ActiveState",
                            "nvidia-fabricmanager"])
        if state is not None and state[0] == 0:
            files["fabric-manager.txt"] = state[1]
    if os.path.isdir(p["socket_dir"]):
        try:
            names = sorted(os.listdir(p["socket_dir"]))
        except OSError as exc:
            runner.checks.append({"command": "ls -1 %s" % p["socket_dir"], "rc": None,
                                  "output": exc.strerror or str(exc)})
        else:
            files["device-plugins.txt"] = "\n".join(names) + ("\n" if names else "")
            runner.checks.append({"command": "ls -1 %s" % p["socket_dir"], "rc": 0, "output": names[:10]})
    else:
        runner.checks.append({"command": "ls -1 %s" % p["socket_dir"], "rc": None,
                              "output": "no such folder"})
    while True:
        try:
            facts = facts_from_artefacts(files, smi_rc=smi_rc, resources=p["resource"])
            break
        except ArtefactError as exc:
            # an output no parser can read is reported and left out (its keys stay unknown),
            # never guessed at
            name = next((n for n in list(files) if exc.message.startswith(n)), None)
            if name is None:
                module.fail_json(msg="on this node: %s" % exc.message, checks=runner.checks)
            runner.checks.append({"command": "read %s" % name, "rc": None, "output": exc.message})
            files.pop(name)
    if smi and "driver_ok" in facts:
        facts["nvidia_smi"] = " ".join(smi)
    return facts, files, runner.checks


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            driver_root=dict(type="path", default="/run/nvidia/driver"),
            crictl=dict(type="str", default="crictl"),
            runtime_endpoint=dict(type="str", default="unix:///run/containerd/containerd.sock"),
            containerd=dict(type="str", default="containerd"),
            containerd_config=dict(type="path"),
            containerd_log=dict(type="path"),
            journalctl=dict(type="str", default="journalctl"),
            dmesg=dict(type="str", default="dmesg"),
            kernel_log=dict(type="path"),
            systemctl=dict(type="str", default="systemctl"),
            fabric_manager=dict(type="str", default="auto", choices=["auto", "always", "never"]),
            socket_dir=dict(type="path", default="/var/lib/kubelet/device-plugins"),
            resource=dict(type="list", elements="str"),
            timeout=dict(type="int", default=20),
        ),
        supports_check_mode=True,
    )
    facts, files, checks = gather(module, module.params)
    module.exit_json(changed=False, node_facts=facts, artefacts=files, checks=checks)


if __name__ == "__main__":
    main()
