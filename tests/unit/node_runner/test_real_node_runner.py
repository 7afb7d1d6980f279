"""real-node.sh itself (node_runner/), run as the role runs it, on this machine's own cgroups:
no command ends without saying why (issue 47), and a cgroup that goes while the node's processes
are collected - the cause of the reboot's silent exit 1 - does not stop it."""
import json
import os
import shutil
import subprocess
import uuid

import pytest

from lab_testing import ROOT

RUNNER = ROOT / "node_runner"
CGROUP = "/sys/fs/cgroup"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.isdir(CGROUP),
                                reason="real-node.sh runs as root on a machine with cgroups")


def node(tmp_path, **env):
    """A node's state folder as the role writes it (node.env, nodebin/), of a node that runs
    nothing: a cluster id of its own, so its names (cgroup, netns, veth) are no lab's."""
    state = tmp_path / "node"
    (state / "nodebin").mkdir(parents=True, exist_ok=True)
    for name in ("real-node.sh", "node_state.py", "node_view.py"):
        shutil.copy(RUNNER / name, state / "nodebin" / name)
    cluster_id = "t" + uuid.uuid4().hex[:7]
    # HOST_IP/NODE_IP (the lab's 10.213.0.0/16, per node) are never put on an interface here: no
    # command these tests run reaches net_up (each fails or ends before it), nothing is sent
    values = dict(NODE_NAME="lab-node-9", CLUSTER_ID=cluster_id, HOST_IP="10.213.255.249",
                  NODE_IP="10.213.255.250", LAB_ROOT=str(tmp_path / "lab"), KUBECONFIG_ADMIN=str(tmp_path / "admin.conf"),
                  PKI_DIR=str(tmp_path / "pki"), BIN_DIR=str(tmp_path / "bin"), KUBELET=str(tmp_path / "bin/kubelet"),
                  PACKAGES_DIR=str(tmp_path / "packages"), TOOLCHAIN_DIR=str(ROOT / "toolchain"),
                  CONTAINERD_VERSION="1.6.20", CONTAINERD_DEBIAN="1.6.20", CONTAINERD_BIN_DIR=str(tmp_path / "bin"),
                  NODE_LABELS="", IMAGES_TAR=str(tmp_path / "images.tar"), WAIT_TIMEOUT="5", GPU_STACK="none")
    values.update(env)
    (state / "node.env").write_text("".join("%s=%s\n" % (k, v) for k, v in values.items()))
    return state, cluster_id


def run(state, *args):
    return subprocess.run(["bash", str(state / "nodebin/real-node.sh"), args[0], str(state), *args[1:]],
                          capture_output=True, text=True, timeout=120)


def json_lines(out):
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def test_a_cgroup_removed_while_the_node_s_processes_are_collected_does_not_stop_it(tmp_path):
    """The cause (issue 47): `kill_all` read the node's cgroup tree with `find -exec cat {} +`;
    a container's cgroup removed during the walk (runc deleting a killed container's, the kubelet
    its Pods') made find exit 1 and, under set -e, the reboot exit 1 saying nothing. Forced here:
    cgroups of the node made and removed as fast as the kernel allows while `down` - the same
    kill_all as the reboot's - collects the node's processes, 40 times. The old runner exited 1
    with empty stdout and stderr in round 0, 7, 3 and 8 of four tries (2026-12-07)."""
    churners, cluster = [], None
    try:
        for attempt in range(40):
            state, cluster_id = node(tmp_path / str(attempt))
            if cluster is None:
                cluster = "gpu-incident-lab-" + cluster_id
                # one busy loop over every hierarchy the node's cgroup may be read in (v1's
                # memory and pids, the hybrid's unified, v2's root) - children of the node's
                # cgroup only, as a running node's containers and Pods have them
                tops = [os.path.join(CGROUP, h, cluster) for h in ("memory", "pids", "unified")
                        if os.path.isfile(os.path.join(CGROUP, h, "cgroup.procs"))]
                if os.path.isfile(os.path.join(CGROUP, "cgroup.controllers")):
                    tops.append(os.path.join(CGROUP, cluster))
                churners.append(subprocess.Popen(
                    ["bash", "-c", 'while :; do for top; do for i in 1 2 3 4; do mkdir -p "$top/kubepods/pod$i/c" 2>/dev/null;'
                                   ' rmdir "$top/kubepods/pod$i/c" "$top/kubepods/pod$i" 2>/dev/null; done; done; done',
                     "churn", *tops]))
            else:   # every round the same cgroup names (the churn's), a state folder anew
                (state / "node.env").write_text((state / "node.env").read_text().replace(cluster_id, cluster.rsplit("-", 1)[1]))
            out = run(state, "down")
            assert out.returncode == 0, "round %d: rc %d, stdout %r, stderr %r" % (attempt, out.returncode, out.stdout, out.stderr)
            said = json_lines(out)
            assert said and said[-1]["holder"] is False and not said[-1].get("failed"), out.stdout
    finally:
        for churner in churners:
            churner.kill()
            churner.wait()
        if cluster:
            for top in [os.path.join(CGROUP, h, cluster) for h in ("memory", "pids", "unified")] + [os.path.join(CGROUP, cluster)]:
                for here, _dirs, _files in sorted(os.walk(top), key=lambda w: -len(w[0])):
                    try:
                        os.rmdir(here)
                    except OSError:
                        pass


def test_the_read_of_the_node_s_processes_skips_what_went_and_names_what_else_failed(tmp_path):
    """node_state.py cgroup-pids, the read that replaced find: a folder that is gone holds no
    process; a cgroup.procs that cannot be read for another reason is named."""
    helper = ["python3", str(RUNNER / "node_state.py"), "cgroup-pids"]
    top = tmp_path / "cg"
    (top / "a/b").mkdir(parents=True)
    (top / "cgroup.procs").write_text("12\n7\n")
    (top / "a/cgroup.procs").write_text("7\n30\n")
    (top / "a/b/cgroup.procs").symlink_to(tmp_path / "gone")     # listed, gone when opened
    out = subprocess.run(helper + [str(top)], capture_output=True, text=True)
    assert (out.returncode, out.stdout.split()) == (0, ["7", "12", "30"])
    assert subprocess.run(helper + [str(tmp_path / "nothing")], capture_output=True, text=True).stdout.split() == []
    (top / "a/cgroup.procs").unlink()
    (top / "a/cgroup.procs").mkdir()                              # EISDIR: not a cgroup that went
    out = subprocess.run(helper + [str(top)], capture_output=True, text=True)
    assert out.returncode == 1 and "reading %s/a/cgroup.procs failed: Is a directory" % top in out.stderr


def _fail_converge(state, tmp_path):
    (tmp_path / "packages").write_text("a file where the packages' folder should be\n")
    return "Not a directory", "mkdir"


def _fail_reboot(state, tmp_path):
    (state / "holder.pid").write_text("1\n")
    return _fail_converge(state, tmp_path)


def _fail_down(state, tmp_path):
    (state / "nodebin/node_state.py").write_text(
        "import sys\nif sys.argv[1] == 'status':\n    sys.exit('node_state: no space left on device')\n")
    return "no space left on device", "status_json"


def _fail_gpu_refresh(state, tmp_path):
    root = tmp_path / "driver-root"
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1").write_text("")
    (root / "usr/bin/nvidia-smi").write_text("")
    (root / "usr/bin/nvidia-smi").chmod(0o755)
    (tmp_path / "mock-src").mkdir()                              # no nvml-mock-hold.sh in it
    (state / "gpu/mock").mkdir(parents=True)
    with open(state / "node.env", "a") as env:
        env.write("GPU_STACK=nvidia\nGPU_DRIVER_ROOT=%s\nGPU_MOCK_SRC=%s\n" % (root, tmp_path / "mock-src"))
    return "nvml-mock-hold.sh", "install"


def _holder(state):
    """A process that passes for the node's namespace holder (its command line names
    nodebin/pause): restart-containerd and exec then go on to their own work."""
    shutil.copy("/bin/sleep", state / "nodebin/pause")
    holder = subprocess.Popen([str(state / "nodebin/pause"), "60"])
    (state / "holder.pid").write_text("%d\n" % holder.pid)
    return holder


def _fail_restart_containerd(state, tmp_path):
    (state / "nodebin/node_view.py").unlink()                    # the node's /etc/containerd cannot be made
    return "node_view.py", "view_sync"


_fail_exec = _fail_restart_containerd


@pytest.mark.parametrize("command,fail", [
    ("converge", _fail_converge), ("reboot", _fail_reboot), ("down", _fail_down),
    ("gpu-refresh", _fail_gpu_refresh), ("restart-containerd", _fail_restart_containerd), ("exec", _fail_exec)])
def test_every_command_that_fails_says_so_in_one_json_message(tmp_path, command, fail):
    """A command of the runner that fails where set -e stops it (not a refusal the script knows)
    ends in exactly one JSON line: the command as written, its line in real-node.sh, the
    functions it ran in, its status and the stderr it wrote."""
    state, _ = node(tmp_path)
    wanted_stderr, wanted_where = fail(state, tmp_path)
    holder = _holder(state) if command in ("restart-containerd", "exec") else None
    try:
        out = run(state, command, *(["true"] if command == "exec" else []))
    finally:
        if holder:
            holder.kill()
            holder.wait()
    said = json_lines(out)
    assert out.returncode != 0 and len(said) == 1, (out.returncode, out.stdout, out.stderr)
    said = said[0]
    script = (state / "nodebin/real-node.sh").read_text().splitlines()
    assert said["failed"] is True and said["status"] == out.returncode
    assert said["command"].split()[0].strip('"$') in script[said["line"] - 1], (said, script[said["line"] - 1])
    assert wanted_where in said["command"] + " " + said["function"], said
    assert any(wanted_stderr in line for line in said["stderr"]), said
    assert said["msg"].startswith("real-node.sh %s failed at line %d" % (command, said["line"]))
    assert wanted_stderr in said["msg"]
    # the stderr the caller sees is the run's, whole (the message quotes it, nothing is swallowed)
    assert wanted_stderr in out.stderr


def test_exec_passes_its_command_s_output_and_status_through(tmp_path):
    """`exec` is the wrappers' (crictl, nvidia-smi, node-exec): a failing command on the node is
    its caller's answer - its own status and output, no JSON of the runner's."""
    state, _ = node(tmp_path)
    holder = _holder(state)
    (tmp_path / "lab/etc/containerd").mkdir(parents=True)
    (state / "etc-containerd").mkdir()
    try:
        # the holder is not in namespaces of its own here: nsenter enters this machine's - enough
        # to show that the command's status and output come back untouched
        out = run(state, "exec", "sh", "-c", "echo out; echo err >&2; exit 7")
    finally:
        holder.kill()
        holder.wait()
    assert (out.returncode, out.stdout, out.stderr) == (7, "out\n", "err\n")
