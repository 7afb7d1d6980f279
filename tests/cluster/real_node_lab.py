"""lab-node-1 as a real node, for tests/cluster/test_real_node.py (the incident's path) and
tests/cluster/test_real_node_gpu.py (NVIDIA's GPU stack on it): each module brings up a lab of its
own (`real_lab`: its own cluster name and lab folder, lab.yml once, teardown afterwards), so the
two run side by side in make test's lanes. What both drive the lab with is written here once.
"""
import contextlib
import json
import os
import pathlib
import re
import subprocess
import sys
import uuid

import pytest
from lab_testing import wait_for  # tests/lab_testing.py: the one bounded wait

ROOT = pathlib.Path(__file__).resolve().parents[2]


PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


ANSIBLE = os.path.join(os.path.dirname(sys.executable), "ansible")


BIN = pathlib.Path(os.environ.get("LAB_BIN_DIR", "~/.cache/gpu-incident-lab/bin")).expanduser()


NODE = "lab-node-1"


SENTINEL = ("RuntimeBreaksOnRestart", "RuntimeRestartPending")


FIXED_DROPIN = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    SystemdCgroup = true
"""


RUNTIME_CHECK = """apiVersion: v1
kind: Pod
metadata: {name: runtime-check, namespace: gpu-lab}
spec:
  nodeName: lab-node-1
  runtimeClassName: nvidia
  containers:
    - name: check
      image: gpu-incident-lab.local/busybox:1.35
      command: ["sh", "-c", "echo sandbox started; trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"]
"""


def play(*args, check=True, env=None):
    out = subprocess.run([PLAYBOOK, *args], cwd=ROOT, capture_output=True, text=True, timeout=1500,
                         env=dict(os.environ, ANSIBLE_FORCE_COLOR="0", **(env or {})))
    recap = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)",
                      out.stdout)
    assert recap, out.stdout[-3000:] + out.stderr[-2000:]
    counts = {k: int(v) for k, v in zip(("ok", "changed", "unreachable", "failed"), recap.groups())}
    if check:
        assert counts["failed"] == 0, out.stdout[-4000:]
    return out, counts


def flat(text):
    """The callback folds long lines: compare with whitespace folded."""
    return " ".join(text.split())


def plain(text):
    """flat, and an apostrophe as written: the YAML callback quotes a message's ' as ''."""
    return flat(text).replace("''", "'")


def sh(*argv, check=True, timeout=60, **kw):
    out = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kw)
    if check:
        assert out.returncode == 0, "%s: %s%s" % (argv, out.stdout[-2000:], out.stderr[-2000:])
    return out


class Lab:
    def __init__(self, tmp):
        self.name = "rn-" + uuid.uuid4().hex[:6]
        self.root = tmp / "gpuop"
        self.extra = ["-e", "lab_root=%s" % self.root, "-e", "lab_cluster_name=%s" % self.name]
        # the tests' own HOME (conftest.home_of_the_tests): the lab's cluster and state are there
        self.kubeconfig = pathlib.Path.home() / ".kwok/clusters" / self.name / "kubeconfig.yaml"
        self.state = pathlib.Path.home() / ".local/state/gpu-incident-lab" / self.name
        self.node_dir = self.state / "node"

    def kubectl(self, *args, check=True, timeout=60):
        return sh(BIN / "kubectl", "--kubeconfig", self.kubeconfig, *args, check=check, timeout=timeout)

    def node(self):
        return json.loads(self.kubectl("get", "node", NODE, "-o", "json").stdout)

    def ready(self):
        for cond in self.node()["status"].get("conditions", []):
            if cond["type"] == "Ready":
                return cond["status"]
        return None

    def sentinel(self):
        """The sentinel's two conditions on lab-node-1 (issue 39): {type: (status, message)}."""
        conds = {c["type"]: (c["status"], c.get("message", "")) for c in self.node()["status"].get("conditions", [])}
        return {t: conds.get(t, ("Absent", "")) for t in SENTINEL}

    def sentinel_says(self, breaks, pending, pending_says="", timeout=60):
        """A bounded wait until RuntimeBreaksOnRestart / RuntimeRestartPending have these statuses
        and the pending message starts with pending_says (NPD runs the check every 10 s here)."""
        def said():
            now = self.sentinel()
            return now if ((now["RuntimeBreaksOnRestart"][0], now["RuntimeRestartPending"][0]) == (breaks, pending)
                           and now["RuntimeRestartPending"][1].startswith(pending_says)) else None
        return self.wait("RuntimeBreaksOnRestart=%s, RuntimeRestartPending=%s %r on %s" % (
            breaks, pending, pending_says, NODE), said, timeout)

    def running(self):
        out = sh(self.node_dir / "bin/crictl", "info")
        return sorted(json.loads(out.stdout)["config"]["containerd"]["runtimes"])

    def env(self):
        values = {}
        for line in (self.node_dir / "node.env").read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                values[key] = value
        return values

    def wait(self, what, predicate, timeout=120):
        return wait_for(what, predicate, timeout, interval=1)


MIG_POD = """apiVersion: v1
kind: Pod
metadata: {name: mig-holder, namespace: gpu-lab}
spec:
  nodeName: lab-node-1
  containers:
    - name: holder
      image: gpu-incident-lab.local/busybox:1.35
      command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"]
      resources:
        limits:
          nvidia.com/mig-1g.5gb: 1
"""


def mig(lab, config, *args, check=True):
    return play("playbooks/mig.yml", "-e", "mig_config=%s" % config, *args, *lab.extra, check=check)


def drill(lab, name, *args, check=True):
    """drill.yml -e drill=NAME: its output, recap counts and the drill it recorded."""
    out, counts = play("playbooks/drill.yml", "-e", "drill=" + name, *args, *lab.extra, check=check)
    return out, counts, json.loads((lab.state / "drill.json").read_text())


def diagnosed(lab):
    """diagnose.yml on the drill Pod: (first broken layer, {layer: the layer's verdict})."""
    play("playbooks/diagnose.yml", *lab.extra)
    result = json.loads((lab.state / "diagnosis.json").read_text())
    return result["first_broken"], {l["layer"]: l for l in result["layers"]}


def graded(lab, name, layer, evidence):
    (lab.root / "drills").mkdir(exist_ok=True)
    (lab.root / "drills" / (name + ".txt")).write_text("LAYER=%s\nEVIDENCE=%s\n" % (layer, evidence))
    out, counts = play("playbooks/grade.yml", "-e", "drill=" + name, *lab.extra, check=False)
    return "Drill %s PASS" % name in flat(out.stdout), out.stdout[-3000:]


CAPABILITY = """apiVersion: v1
kind: Pod
metadata:
  name: %(name)s
  namespace: gpu-lab
spec:
  restartPolicy: Never
  %(runtime)s
  nodeSelector: {kubernetes.io/hostname: lab-node-1}
  containers:
    - name: cuda-check
      image: nvidia/cuda:12.4.1-base-ubuntu22.04
      command: ["bash", "-lc"]
      args: [%(args)s]
      resources:
        limits:
          nvidia.com/gpu: 1
"""


def capability_pod(lab, name, args='"nvidia-smi"', runtime="runtimeClassName: nvidia"):
    """Seed 003's capability Pod (its manifest as printed there, on lab-node-1); its end and log."""
    sh(BIN / "kubectl", "--kubeconfig", lab.kubeconfig, "apply", "-f", "-",
       input=CAPABILITY % {"name": name, "args": args, "runtime": runtime})

    def ended():
        pod = json.loads(lab.kubectl("-n", "gpu-lab", "get", "pod", name, "-o", "json").stdout)
        return pod if pod["status"].get("phase") in ("Succeeded", "Failed") else None
    pod = lab.wait("the capability Pod %s to end" % name, ended, 120)
    return pod, lab.kubectl("-n", "gpu-lab", "logs", name, check=False).stdout


def allocated(lab, pod_uid):
    """The device IDs the kubelet allocated to a Pod (its own checkpoint, on the node)."""
    data = json.loads((lab.node_dir / "kubelet/device-plugins/kubelet_internal_checkpoint").read_text())["Data"]
    return [d for e in data["PodDeviceEntries"] if e["PodUID"] == pod_uid for ds in e["DeviceIDs"].values() for d in ds]


@contextlib.contextmanager
def real_lab(tmp_path_factory):
    """A lab of the module's own with lab-node-1 real (lab.yml once; its output kept as first_run),
    torn down afterwards; the module is skipped where the machine cannot run a real node."""
    probe = sh("bash", ROOT / "node_runner/real-node.sh", "probe").stdout.strip()
    if probe != "ok":
        pytest.skip("this machine cannot run a real node: " + probe)
    lab = Lab(tmp_path_factory.mktemp("realnode"))
    try:
        out, _ = play("lab.yml", *lab.extra)
        lab.first_run = out.stdout
        yield lab
    finally:
        play("playbooks/teardown.yml", *lab.extra, check=False)


def fixed(lab):
    """The reboot fix as test_real_node's graded fix makes it: the drop-in keeps runc and adds
    nvidia, reboot.yml loads both (the gate lets a correct drop-in through once the sentinel ran
    its check on it)."""
    (lab.root / "etc/containerd/conf.d/99-nvidia.toml").write_text(FIXED_DROPIN)
    lab.sentinel_says("False", "True")      # the gate reads the sentinel: it has seen the fix first
    play("playbooks/reboot.yml", *lab.extra)
    assert lab.ready() == "True" and lab.running() == ["nvidia", "runc"]
