"""lab-node-1 as a real node: a real containerd 1.6.20 and kubelet on this machine.

One lab (its own cluster name and lab folder) is brought up once with `lab.yml`; the tests then
drive it in order, as a trainee would: the incident's end state, logs/exec, the handler that
would have prevented it, kill -9 and rerun, the next reboot (NotReady for real), the diagnosis
of it, the graded fix, containerd 2.2.0 on the same files, and a teardown that leaves nothing.
Skipped where the machine cannot run a real node (the lab then says why and uses kwok).
"""
import hashlib
import json
import os
import pathlib
import re
import signal
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from headless_chromium import Chromium, binary  # noqa: E402
from lab_testing import wait_for  # tests/lab_testing.py: the one bounded wait
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


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    probe = sh("bash", ROOT / "roles/real_node/files/real-node.sh", "probe").stdout.strip()
    if probe != "ok":
        pytest.skip("this machine cannot run a real node: " + probe)
    lab = Lab(tmp_path_factory.mktemp("realnode"))
    try:
        out, _ = play("lab.yml", *lab.extra)
        lab.first_run = out.stdout
        yield lab
    finally:
        play("playbooks/teardown.yml", *lab.extra, check=False)


def test_incident_end_state(lab):
    """The drop-in is on disk, the running containerd has only runc, the files say nvidia."""
    node = lab.node()
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.36.3"
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"] == "containerd://1.6.20"
    assert "kwok.x-k8s.io/node" not in node["metadata"].get("annotations", {})
    assert lab.ready() == "True"
    # this machine's own CPUs and memory, not the kwok nodes' 8 / 32Gi
    assert node["status"]["capacity"]["cpu"] == str(os.cpu_count())
    mem_kib = int(re.search(r"MemTotal:\s+(\d+) kB", pathlib.Path("/proc/meminfo").read_text()).group(1))
    assert node["status"]["capacity"]["memory"] == "%dKi" % mem_kib
    assert (lab.root / "etc/containerd/conf.d/99-nvidia.toml").exists()
    assert lab.running() == ["runc"]
    dump = sh(lab.node_dir / "bin/containerd", "config", "dump").stdout
    assert 'runtimes.nvidia]' in dump                      # what the next start loads
    assert "containerd 1.6.20 started from the main config alone" in flat(lab.first_run)
    assert "then the drop-in arrived: conf.d/99-nvidia.toml" in flat(lab.first_run)
    # the node's own address answers the kubelet port, anonymous requests are refused
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen("https://%s:10250/pods" % lab.env()["NODE_IP"], context=ctx, timeout=10)
    assert err.value.code == 401
    # the namespace has no default route: nothing in it reaches beyond the machine
    netns = "gil-" + lab.env()["CLUSTER_ID"]
    assert sh("ip", "-n", netns, "route", "show", "default").stdout.strip() == ""


def test_the_sentinel_names_the_latent_fault_before_the_reboot(lab):
    """Issue 39: node-problem-detector (built here, as a DaemonSet Pod on lab-node-1) runs the
    check; after lab.yml both conditions are True with messages naming the runtimes and the file,
    `kubectl describe node` shows them and NPD's events."""
    now = lab.sentinel_says("True", "True", "loaded: runc; next start: nvidia (")
    assert ("next start of containerd 1.6.20 serves no CRI: default_runtime_name runc is not among runtimes "
            "nvidia - the containerd.runtimes table is replaced whole by %s" % (lab.root / "etc/containerd/conf.d/99-nvidia.toml")
            == now["RuntimeBreaksOnRestart"][1])
    described = flat(lab.kubectl("describe", "node", NODE).stdout)
    assert "RuntimeBreaksOnRestart True" in described and "RuntimeRestartPending True" in described
    # NPD's events: "Warning  NextStartServesNoCRI  12s  runtime-sentinel  Node condition ..."
    assert re.search(r"NextStartServesNoCRI (\S+ )+runtime-sentinel Node condition RuntimeBreaksOnRestart is now: True",
                     described), described[-1500:]
    pod = json.loads(lab.kubectl("-n", "kube-system", "get", "pods", "-l", "app=runtime-sentinel", "-o", "json").stdout)["items"]
    assert [p["spec"]["nodeName"] for p in pod] == [NODE]
    assert pod[0]["spec"]["containers"][0]["image"] == "registry.k8s.io/node-problem-detector/node-problem-detector:v1.34.0"


def test_pods_run_logs_exec_and_nvidia_refused(lab):
    lab.kubectl("-n", "gpu-lab", "run", "bb", "--image=gpu-incident-lab.local/busybox:1.35",
                "--overrides", json.dumps({"spec": {"nodeName": NODE}}), "--restart=Never", "--",
                "sh", "-c", "echo hello-from-the-real-node; trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done")
    lab.kubectl("-n", "gpu-lab", "wait", "--for=condition=Ready", "pod/bb", "--timeout=90s", timeout=100)
    assert "hello-from-the-real-node" in lab.kubectl("-n", "gpu-lab", "logs", "bb").stdout
    assert lab.kubectl("-n", "gpu-lab", "exec", "bb", "--", "cat", "/proc/1/cmdline").stdout.startswith("sh")
    ip = lab.kubectl("-n", "gpu-lab", "get", "pod", "bb", "-o", "jsonpath={.status.podIP}").stdout
    assert ip.startswith("10.88.")                                     # the node's CNI bridge
    sh(BIN / "kubectl", "--kubeconfig", lab.kubeconfig, "apply", "-f", "-", input=RUNTIME_CHECK)

    def refused():
        events = lab.kubectl("-n", "gpu-lab", "get", "events", "--field-selector",
                             "involvedObject.name=runtime-check", "-o", "json").stdout
        return any('no runtime for "nvidia" is configured' in e.get("message", "")
                   for e in json.loads(events)["items"])
    lab.wait("containerd's own words for the nvidia sandbox", refused)
    lab.kubectl("-n", "gpu-lab", "delete", "pod", "bb", "runtime-check", "--wait=false")


def test_step_7_through_nvidia_s_device_plugin(lab):
    """lab-node-1's 20 come from NVIDIA's device plugin (over the mock NVML), not from a patch: the
    GPU Operator's labels deployed it with the config, and a hand patch is undone by the kubelet."""
    node = lab.node()
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "true" and labels["nvidia.com/device-plugin.config"] == "any"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "20" and node["status"]["capacity"]["nvidia.com/gpu"] == "20"
    log = lab.kubectl("-n", "gpu-operator", "logs", "ds/nvidia-device-plugin-daemonset", "-c", "nvidia-device-plugin").stdout
    assert "Registered device plugin for 'nvidia.com/gpu' with Kubelet" in log
    assert "Got registration request from device plugin" in (lab.node_dir / "kubelet.log").read_text()
    assert sh(lab.node_dir / "bin/nvidia-smi", "-L").stdout.count("NVIDIA A100-SXM4-40GB (UUID: GPU-") == 4
    lab.kubectl("patch", "node", NODE, "--subresource=status", "--type=merge",
                "-p", '{"status":{"capacity":{"nvidia.com/gpu":"99"},"allocatable":{"nvidia.com/gpu":"99"}}}')
    lab.wait("the kubelet to write back what its device plugin advertises",
             lambda: lab.node()["status"]["capacity"].get("nvidia.com/gpu") == "20", 60)
    # seed 003's preflight, on this node, records passed where the seed had to write skipped
    play("playbooks/preflight.yml", "-e", "node=%s" % NODE, "-e", "experiment_id=rn-node-check", *lab.extra)
    record = json.loads((lab.state / "preflight/rn-node-check.json").read_text())
    assert record["status"] == "passed" and "MOCK NVML" in record["reason"]
    assert [record["layers"][layer]["status"] for layer in ("driver", "container-runtime", "device-plugin")] == ["verifiable"] * 3


def test_gpu_faults_are_read_live_in_the_components_own_words(lab):
    """An Xid marks one replica unhealthy (20 -> 19, NVIDIA/k8s-device-plugin#1929); the version
    mismatch of a kernel update stops NVML - nvidia-smi and the plugin say so, and gpu_diagnose on
    lab-node-1 names the driver layer quoting them; healthy again afterwards."""
    out, _ = play("playbooks/gpu-fault.yml", "-e", "fault=xid", *lab.extra)
    node = lab.node()["status"]
    assert node["capacity"]["nvidia.com/gpu"] == "20" and node["allocatable"]["nvidia.com/gpu"] == "19"
    log = lab.kubectl("-n", "gpu-operator", "logs", "ds/nvidia-device-plugin-daemonset", "-c", "nvidia-device-plugin").stdout
    assert re.search(r"XidCriticalError: Xid=79 on Device=GPU-[0-9a-f-]+::\d; marking device as unhealthy", log)
    play("playbooks/gpu-fault.yml", "-e", "fault=kernel-update", *lab.extra)
    smi = sh(lab.node_dir / "bin/nvidia-smi", check=False)
    assert smi.returncode == 18 and smi.stdout.startswith("Failed to initialize NVML: Driver/library version mismatch")
    play("playbooks/diagnose.yml", "-e", "node=%s" % NODE, *lab.extra)
    result = json.loads((lab.state / "diagnosis.json").read_text())
    assert result["first_broken"] == "driver"
    driver = [l for l in result["layers"] if l["layer"] == "driver"][0]
    evidence = json.dumps(driver["evidence"])
    assert "Failed to initialize NVML: Driver/library version mismatch" in evidence     # nvidia-smi's words
    # the plugin's own words: with MIG_STRATEGY=mixed (the lab's since issue 40) NVML first fails
    # where it adds the MIG resources (internal/rm/rm.go), before its resource managers
    assert "unable to add default resources to config: failed to initialize NVML: Driver/library version mismatch" in evidence
    assert lab.node()["status"]["allocatable"]["nvidia.com/gpu"] == "0"
    play("playbooks/gpu-fault.yml", "-e", "fault=none", *lab.extra)
    assert lab.node()["status"]["allocatable"]["nvidia.com/gpu"] == "20"
    out, counts = play("lab.yml", *lab.extra)
    assert counts["changed"] == 0, out.stdout[-3000:]


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


def test_mig_for_real_through_nvidia_s_mig_parted_plugin_and_gfd(lab):
    """Issue 40: NVIDIA's nvidia-mig-parted lays the mock's 4 x A100-SXM4-40GB out by the GPU
    Operator's config names and k8s-mig-manager's labels; NVIDIA's device plugin (mixed) advertises
    what it made through the kubelet, GFD's labels arrive through nfd-master; a rerun changes
    nothing, --check changes nothing, an unknown layout is refused naming the known ones, and
    all-disabled gives step 7's 20 back. (A Pod holding a MIG device: after the fix, below -
    the holders come from NVIDIA's runtime applying the CDI spec's hooks.)"""
    out, _ = mig(lab, "all-1g.5gb")
    node = lab.node()
    labels = node["metadata"]["labels"]
    assert node["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] == "28"
    assert (labels["nvidia.com/mig.config"], labels["nvidia.com/mig.config.state"]) == ("all-1g.5gb", "success")
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == labels["nvidia.com/gpu.deploy.gpu-feature-discovery"] == "true"
    # GPU feature discovery's own labels, written by nfd-master (it lists what it owns)
    assert labels["nvidia.com/mig.strategy"] == "mixed" and labels["nvidia.com/mig-1g.5gb.count"] == "28"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert "nvidia.com/mig-1g.5gb.count" in node["metadata"]["annotations"]["nfd.node.kubernetes.io/feature-labels"]
    assert sh(lab.node_dir / "bin/nvidia-smi", "-L").stdout.count("MIG 1g.5gb") == 28
    log = lab.kubectl("-n", "gpu-operator", "logs", "ds/nvidia-device-plugin-daemonset", "-c", "nvidia-device-plugin").stdout
    assert "Registered device plugin for 'nvidia.com/mig-1g.5gb' with Kubelet" in log
    out, counts = mig(lab, "all-1g.5gb")
    assert counts["changed"] == 0, out.stdout[-3000:]
    # lab_mig_strategy=single: every MIG device is nvidia.com/gpu, and step 7's time-slicing
    # config replicates them (28 x 5); GFD names the product by its MIG profile
    mig(lab, "all-1g.5gb", "-e", "lab_mig_strategy=single")
    node = lab.node()
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "140" and node["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] == "0"
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/mig.strategy"] == "single" and labels["nvidia.com/gpu.count"] == "28"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED"
    mig(lab, "all-1g.5gb")                                  # back to mixed, the lab's default
    assert lab.node()["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] == "28"
    out, counts = mig(lab, "all-balanced", "--check")
    assert lab.node()["metadata"]["labels"]["nvidia.com/mig.config"] == "all-1g.5gb"
    assert sh(lab.node_dir / "bin/nvidia-smi", "-L").stdout.count("MIG 1g.5gb") == 28
    out, counts = mig(lab, "all-9g.99gb", check=False)
    assert counts["failed"] == 1 and "is not a layout of" in flat(out.stdout) and "all-balanced" in flat(out.stdout)
    mig(lab, "all-balanced")
    allocatable = lab.node()["status"]["allocatable"]
    assert {k: allocatable[k] for k in ("nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb")} == {
        "nvidia.com/mig-1g.5gb": "8", "nvidia.com/mig-2g.10gb": "4", "nvidia.com/mig-3g.20gb": "4"}
    out, counts = mig(lab, "all-disabled")
    node = lab.node()
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "20"      # step 7's time-slicing again
    assert not [k for k in node["metadata"]["labels"] if k.startswith("nvidia.com/mig-") and k.endswith(".count")]
    assert node["metadata"]["labels"]["nvidia.com/mig.config.state"] == "success"


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


def test_runtime_not_loaded_is_lab_node_1_s_own_state_until_the_fix(lab):
    """Before the reboot fix lab-node-1's containerd has runc only: drill runtime-not-loaded is
    about lab-node-1 itself - the drill Pod lands there and containerd refuses its sandbox in its
    own words; the drills that need the runtime stay on lab-node-0's stand-ins and say why."""
    assert lab.running() == ["runc"]
    out, _, state = drill(lab, "runtime-not-loaded")
    assert (state["node"], state["real"], state["layer"]) == (NODE, True, "container-runtime")
    pod = json.loads(lab.kubectl("-n", "gpu-drill", "get", "pod", "cuda-drill", "-o", "json").stdout)
    assert pod["spec"]["nodeName"] == NODE

    def refused():
        events = lab.kubectl("-n", "gpu-drill", "get", "events", "--field-selector",
                             "involvedObject.name=cuda-drill", "-o", "json").stdout
        return 'no runtime for \\"nvidia\\" is configured' in events
    lab.wait("containerd to refuse the drill Pod's sandbox (no nvidia runtime)", refused, 60)
    first, layers = diagnosed(lab)
    assert first == "container-runtime"
    assert 'no runtime for \\"nvidia\\" is configured' in json.dumps(layers["container-runtime"]["evidence"])
    ok, text = graded(lab, "runtime-not-loaded", "container-runtime",
                      "crictl info on lab-node-1 lists only runc; the handler nvidia is not loaded")
    assert ok, text
    # a drill of the plugin needs the runtime below it: on the stand-ins, and drill.yml says why
    out, _, state = drill(lab, "plugin-no-mount")
    assert (state["node"], state["real"]) == ("lab-node-0", False)
    assert "has only runc loaded - the incident itself" in flat(out.stdout)
    assert lab.node()["status"]["allocatable"]["nvidia.com/gpu"] == "20"
    drill(lab, "reset")


def test_a_support_bundle_of_the_real_node_hides_what_it_planted(lab, tmp_path):
    """Issue 32 as an attacker tests it, on the real node: registry credentials in a containerd
    file (its config dump carries them), a Pod on lab-node-1 whose args and log carry secrets; every
    byte of the bundle, the archive's members and the run's output is searched for each."""
    import tarfile
    sys.path.insert(0, str(ROOT / "tests/bundle_corpus"))
    import plant_secrets   # noqa: E402 pylint: disable=import-outside-toplevel
    secrets = plant_secrets.PLANTED
    registry = lab.root / "etc/containerd/conf.d/zz-registry.toml"
    registry.write_text("version = 2\n" + plant_secrets.registry_toml())
    printer = """apiVersion: v1
kind: Pod
metadata: {name: secret-printer, namespace: gpu-lab, annotations: {api-token: "%(annotation-token)s"}}
spec:
  nodeName: lab-node-1
  restartPolicy: Never
  containers:
    - name: app
      image: gpu-incident-lab.local/busybox:1.35
      command: ["sh", "-c", "echo connecting to postgres://%(url-user)s:%(url-password)s@db:5432/x; echo 'Authorization: Bearer %(log-bearer)s'; echo AWS_SECRET_ACCESS_KEY=%(aws-secret)s; echo password=%(log-password)s", "--password=%(arg-password)s", "--token", "%(arg-token)s"]
""" % secrets
    try:
        sh(BIN / "kubectl", "--kubeconfig", lab.kubeconfig, "apply", "-f", "-", input=printer)
        lab.kubectl("-n", "gpu-lab", "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/secret-printer",
                    "--timeout=90s", timeout=100)
        assert secrets["log-password"] in lab.kubectl("-n", "gpu-lab", "logs", "secret-printer").stdout   # planted for real
        dest = tmp_path / "bundle"
        out, _ = play("playbooks/support-bundle.yml", "-e", "dest=%s" % dest, "-e", "pod=gpu-lab/secret-printer", *lab.extra)
    finally:
        registry.unlink()
        lab.kubectl("-n", "gpu-lab", "delete", "pod", "secret-printer", "--wait=false", check=False)
    dump = (dest / "nodes" / NODE / "containerd-config-dump.toml").read_text()
    assert "registry.configs" in dump and "<redacted>" in dump          # the node's own dump, redacted
    texts = {str(p): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    with tarfile.open(str(dest) + ".tar.gz") as tar:
        texts.update({"archive:" + m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()})
    texts["the run's output"] = (out.stdout + out.stderr).encode()
    planted = {k: v for k, v in secrets.items() if k in (
        "registry-password", "registry-auth", "registry-identitytoken", "registry-auths-user", "registry-auths-password",
        "registry-header", "arg-password", "arg-token", "url-password", "annotation-token", "log-bearer", "log-password",
        "aws-secret")}
    found = ["%s in %s" % (k, where) for k, v in planted.items() for where, data in texts.items() if v.encode() in data]
    assert not found, found
    bundle = json.loads((dest / "bundle.json").read_text())
    report = bundle["redactions"]
    assert report["values"] >= len(planted) and "nodes/%s/containerd-config-dump.toml" % NODE in report["files"]
    assert all(v not in json.dumps(report) for v in planted.values())     # the report names rules, never values


def test_handler_restarts_and_names_what_is_missing(lab, tmp_path):
    """containerd_config with its handler on: 1.6.20 restarted with the seed's drop-in fails,
    and the role says what the running daemon lacks; lab.yml brings the incident back."""
    playbook = ROOT / "playbooks" / ("zz-handler-%s.yml" % uuid.uuid4().hex[:6])
    node_dir = lab.node_dir
    playbook.write_text("""---
- name: Handler test
  hosts: lab_controller
  gather_facts: false
  roles:
    - role: containerd_config
      vars:
        containerd_config_dir: %s/etc/containerd
        containerd_config_write_main: false
        containerd_config_dropins:
          - {name: 99-nvidia.toml, runtimes: {nvidia: {runtime_type: io.containerd.runc.v2, options: {BinaryName: /usr/bin/nvidia-container-runtime}}}}
        containerd_config_restart: true
        containerd_config_restart_command: ["%s/nodebin/real-node.sh", restart-containerd, "%s"]
        containerd_config_crictl: "%s/bin/crictl"
        containerd_config_restart_timeout: 6
""" % (lab.root, node_dir, node_dir, node_dir))
    try:
        out, counts = play(str(playbook), *lab.extra, check=False)
    finally:
        playbook.unlink()
    assert counts["failed"] == 1
    assert "RUNNING HANDLER [containerd_config" in out.stdout
    assert "containerd was restarted but its running CRI config does not answer" in flat(out.stdout)
    assert "where the files declare nvidia" in flat(out.stdout)
    out, _ = play("lab.yml", *lab.extra)
    assert "back to the incident's end state" in flat(out.stdout)
    assert lab.running() == ["runc"] and lab.ready() == "True"


@pytest.mark.parametrize("name", ["containerd", "kubelet"])
def test_a_dead_process_of_the_node_is_named_with_its_status_and_log(lab, name):
    """A process of the node that dies - containerd or the kubelet (issue 34) - is named on the
    rerun with how it ended and its log's last lines."""
    pid = (lab.node_dir / ("%s.pid" % name)).read_text().strip()
    os.kill(int(pid), signal.SIGKILL)
    lab.wait("the supervisor's record of %s's end" % name, lambda: (lab.node_dir / ("%s.exit" % name)).exists(), 10)
    assert (lab.node_dir / ("%s.exit" % name)).read_text().strip() == "137"
    out, _ = play("lab.yml", *lab.extra)
    said = flat(out.stdout)
    assert ("%s was not running: %s (pid %s) was killed by signal 9 (SIGKILL, exit status 137); "
            "the last lines of its log %s/%s.log:" % (name, name, pid, lab.node_dir, name)) in said, said[-3000:]
    assert "(the log is empty)" not in said and lab.ready() == "True"


def test_kill_and_rerun_brings_the_node_back(lab):
    for name in ("containerd", "kubelet"):
        os.kill(int((lab.node_dir / ("%s.pid" % name)).read_text()), signal.SIGKILL)
    out, counts = play("lab.yml", *lab.extra)
    assert "containerd was not running" in flat(out.stdout) and counts["changed"] > 0
    assert lab.ready() == "True" and lab.running() == ["runc"]
    out, counts = play("lab.yml", *lab.extra)
    changed = [t for t in re.findall(r"TASK \[([^\]]+)\][^\n]*\n(?:[^\n]*\n)*?changed:", out.stdout)]
    assert counts["changed"] == 0, changed


ROW = "(document.querySelector('#nodes tr[data-node=\"%s\"]') || {dataset: {}})" % NODE


def test_reboot_not_ready_then_diagnosed(lab, tmp_path):
    """The next reboot for real - and the live board following it (issue 33: a step graded, a
    drill put in place, a reboot), without a reload, in Debian's headless Chromium."""
    if not binary():
        pytest.fail("no Chromium: apt-get install chromium (the browser tests need Debian's package)",
                    pytrace=False)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        board = lab.extra + ["-e", "lab_board_port=%d" % probe.getsockname()[1]]
    out, _ = play("playbooks/board.yml", *board)
    url = "http://127.0.0.1:%s/" % board[-1].split("=")[1]
    assert url in out.stdout
    try:
        with Chromium(width=1200, height=1000) as chromium:
            page = chromium.open(url)
            page.evaluate("window.__sameDocument = 'yes'")
            page.wait_for(ROW + ".dataset.ready === 'True'", "lab-node-1 Ready on the board", timeout=30)
            assert page.evaluate(ROW + ".dataset.kind") == "real"

            # the gate first: refused while the sentinel says the next start breaks, nothing stopped
            lab.sentinel_says("True", "True")
            pid = (lab.node_dir / "containerd.pid").read_text()
            out, counts = play("playbooks/reboot.yml", *lab.extra, check=False)
            said = flat(out.stdout)
            assert counts["failed"] == 1 and "Refused: lab-node-1 carries RuntimeBreaksOnRestart=True" in said, said[-2000:]
            assert "default_runtime_name runc is not among runtimes nvidia" in said and "Nothing was stopped" in said
            assert "ansible-playbook playbooks/reboot.yml -e reboot_force=true" in said
            assert (lab.node_dir / "containerd.pid").read_text() == pid and lab.ready() == "True"
            out, _ = play("playbooks/reboot.yml", "-e", "reboot_force=true", *lab.extra)
            assert "no corresponding runtime configured in `containerd.runtimes`" in flat(out.stdout)
            assert lab.ready() in ("False", "Unknown")
            page.wait_for("['False', 'Unknown'].includes(" + ROW + ".dataset.ready)",
                          "lab-node-1 not Ready (False or Unknown) on the board after the reboot", timeout=30)

            out, _ = play("playbooks/diagnose.yml", "-e", "node=%s" % NODE, *lab.extra)
            result = json.loads((lab.state / "diagnosis.json").read_text())
            assert result["node"] == NODE and result["first_broken"] == "container-runtime"
            layer = [l for l in result["layers"] if l["layer"] == "container-runtime"][0]
            evidence = json.dumps(layer["evidence"])
            assert "default_runtime_name" in evidence and "io.containerd.grpc.v1.cri" in evidence
            page.wait_for("(document.querySelector('#diagnosis [data-first-broken=\"true\"]') || {dataset: {}})"
                          ".dataset.layer === 'container-runtime'", "the reboot's diagnosis on the board", timeout=30)
            assert page.evaluate("window.__sameDocument") == "yes", "the page was reloaded"
            page.screenshot(str(tmp_path / "board-after-reboot.png"))
            page.close()
    finally:
        play("playbooks/board.yml", "-e", "state=absent", *board, check=False)


def test_graded_fix(lab):
    out, counts = play("playbooks/grade.yml", "-e", "drill=reboot", *lab.extra, check=False)
    assert counts["failed"] == 1 and "is not Ready" in flat(out.stdout)
    (lab.root / "etc/containerd/conf.d/99-nvidia.toml").write_text(FIXED_DROPIN)
    out, _ = play("playbooks/reboot.yml", *lab.extra)   # the gate passes a node that is down
    assert "lab-node-1 is not Ready: its sentinel does not run" in flat(out.stdout)
    assert lab.ready() == "True" and lab.running() == ["nvidia", "runc"]
    # a reboot leaves no cgroup of the last boot behind: the kubelet found none to adopt
    assert "Failed to create existing container" not in (lab.node_dir / "kubelet.log").read_text()
    lab.sentinel_says("False", "False")                     # after the reboot fix: both False
    sh(BIN / "kubectl", "--kubeconfig", lab.kubeconfig, "apply", "-f", "-", input=RUNTIME_CHECK)
    lab.kubectl("-n", "gpu-lab", "wait", "--for=condition=Ready", "pod/runtime-check", "--timeout=90s",
                timeout=100)
    before = (lab.root / "etc/containerd/conf.d/99-nvidia.toml").read_text()
    out, counts = play("playbooks/grade.yml", "-e", "drill=reboot", *lab.extra)
    assert counts["changed"] == 0 and "Drill reboot PASS" in out.stdout
    assert (lab.root / "etc/containerd/conf.d/99-nvidia.toml").read_text() == before
    lab.kubectl("-n", "gpu-lab", "delete", "pod", "runtime-check", "--wait=false")


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


def test_seed_003s_evidence_a_gpu_pod_gets_the_gpu_the_plugin_allocated(lab):
    """After the graded fix containerd has nvidia: NVIDIA's device plugin (over the mock NVML) is
    registered again, the capability Pod lands on lab-node-1 and NVIDIA's runtime (mode cdi)
    gives it the very GPU the plugin allocated; its nvidia-smi lists it; without the runtime the
    command is missing as with the real image; a second Pod gets a GPU after the first ended."""
    def plugin_back():   # the kubelet counts the plugin's devices as allocatable only once it registered
        node = lab.node()
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
        log = (lab.node_dir / "kubelet.log").read_text()
        return ready["status"] == "True" and node["status"]["allocatable"].get("nvidia.com/gpu") == "20" \
            and "Got registration request from device plugin" in log
    lab.wait("the kubelet to post NVIDIA's device plugin's 20 devices again", plugin_back, 180)
    plugin = json.loads(lab.kubectl("-n", "gpu-operator", "get", "pods", "-l", "app=nvidia-device-plugin-daemonset",
                                    "-o", "json").stdout)["items"]
    assert [p["spec"]["nodeName"] for p in plugin] == [NODE]
    # reboot.yml came back only once the plugin registered again (a GPU Pod admitted before that
    # is refused: UnexpectedAdmissionError)
    pod, log = capability_pod(lab, "gpu-capability-check")
    assert pod["status"]["phase"] == "Succeeded" and pod["spec"]["nodeName"] == NODE, (pod["status"], log)
    assert "NVIDIA A100-SXM4-40GB" in log and "40960MiB" in log and "Driver Version: 550.54.15" in log
    devices = allocated(lab, pod["metadata"]["uid"])
    assert len(devices) == 1 and devices[0].startswith("GPU-") and "::" in devices[0]   # one time-sliced replica
    uuid = devices[0].split("::")[0]
    runtime_log = (lab.node_dir / "ov/var/up/log/nvidia-container-runtime.log").read_text()
    assert "nvidia.com/gpu=%s" % uuid in runtime_log            # NVIDIA's runtime injected it through CDI
    # a second Pod, after the first ended: the GPU it gets, by UUID, is the one the plugin gave it
    pod2, log2 = capability_pod(lab, "gpu-capability-list", args='"nvidia-smi -L"')
    assert pod2["status"]["phase"] == "Succeeded", (pod2["status"], log2)
    uuid2 = allocated(lab, pod2["metadata"]["uid"])[0].split("::")[0]
    assert log2.strip().splitlines() == [line for line in log2.strip().splitlines() if uuid2 in line] and len(log2.strip().splitlines()) == 1
    assert re.match(r"GPU 0: NVIDIA A100-SXM4-40GB \(UUID: %s\)$" % re.escape(uuid2), log2.strip())
    # runc alone (no runtimeClassName): the image has no nvidia-smi, as the real CUDA base image
    pod3, log3 = capability_pod(lab, "gpu-capability-runc", runtime="")
    assert pod3["status"]["phase"] == "Failed" and "nvidia-smi: not found" in log3
    assert pod3["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 127
    lab.kubectl("-n", "gpu-lab", "delete", "pod", "gpu-capability-check", "gpu-capability-list", "gpu-capability-runc",
                "--wait=false")


def test_a_mig_pod_sees_exactly_the_mig_device_it_was_given(lab):
    """Issue 40 items 4 and 5, after the fix (containerd has nvidia): on all-1g.5gb a Pod asking
    nvidia.com/mig-1g.5gb: 1 with runtimeClassName nvidia sees exactly the MIG device the plugin
    allocated - NVIDIA's runtime injects it through the node's CDI spec, which mig.yml rewrote;
    while a Pod has a MIG device, the spec's hook marks it held (the mock's holders) and a layout
    change fails naming the Pod; once it is deleted the device is free and all-disabled gives
    step 7's 20 back."""
    mig(lab, "all-1g.5gb")
    spec = (lab.node_dir / "gpu/cdi/nvidia.json").read_text()
    assert spec.count('"name": "MIG-') == 28
    sh(BIN / "kubectl", "--kubeconfig", lab.kubeconfig, "apply", "-f", "-",
       input=(CAPABILITY % {"name": "mig-capability", "args": '"nvidia-smi -L"', "runtime": "runtimeClassName: nvidia"}
              ).replace("nvidia.com/gpu: 1", "nvidia.com/mig-1g.5gb: 1"))
    pod = lab.wait("the MIG capability Pod to end", lambda: (lambda p: p if p["status"].get("phase") in ("Succeeded", "Failed")
                   else None)(json.loads(lab.kubectl("-n", "gpu-lab", "get", "pod", "mig-capability", "-o", "json").stdout)), 120)
    log = lab.kubectl("-n", "gpu-lab", "logs", "mig-capability", check=False).stdout
    assert pod["status"]["phase"] == "Succeeded", (pod["status"], log)
    [device] = allocated(lab, pod["metadata"]["uid"])
    lines = log.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("GPU ") and re.match(r"^  MIG 1g\.5gb +Device +0: \(UUID: %s\)$"
                                                                         % re.escape(device), lines[1]), log
    assert "nvidia.com/gpu=%s" % device in (lab.node_dir / "ov/var/up/log/nvidia-container-runtime.log").read_text()
    held = lab.node_dir / "gpu/mock/nvml-mock-mig.state.held"
    lab.kubectl("-n", "gpu-lab", "delete", "pod", "mig-capability", "--wait=true", timeout=120)
    lab.wait("the runtime's poststop hook to release %s" % device, lambda: not (held / device).exists(), 60)
    # a running Pod holds its device: the layout cannot change under it
    sh(BIN / "kubectl", "--kubeconfig", lab.kubeconfig, "apply", "-f", "-",
       input=MIG_POD.replace("spec:\n", "spec:\n  runtimeClassName: nvidia\n", 1))
    pod = lab.wait("the MIG holder Pod to run", lambda: (lambda p: p if p["status"].get("phase") == "Running" else None)(
        json.loads(lab.kubectl("-n", "gpu-lab", "get", "pod", "mig-holder", "-o", "json").stdout)), 120)
    [device] = allocated(lab, pod["metadata"]["uid"])
    assert (held / device).exists()                          # the createRuntime hook's mark
    out, counts = mig(lab, "all-balanced", check=False)
    assert counts["failed"] == 1 and "gpu-lab/mig-holder (nvidia.com/mig-1g.5gb: 1)" in flat(out.stdout)
    assert "In use by another client" in flat(out.stdout) or "all orderings failed" in flat(out.stdout)
    lab.kubectl("-n", "gpu-lab", "delete", "pod", "mig-holder", "--wait=true", timeout=120)
    lab.wait("the runtime's poststop hook to release %s" % device, lambda: not (held / device).exists(), 60)
    mig(lab, "all-disabled")
    assert lab.node()["status"]["allocatable"]["nvidia.com/gpu"] == "20"


# (drill, its layer, lab-node-1's allocatable with it, words of a real component in the layer's
# evidence, an answer's evidence)
REAL_DRILLS = [
    ("plugin-no-mount", "device-plugin", "0", "failed to create FS watcher for /var/lib/kubelet/device-plugins/",
     "the device plugin pod on lab-node-1 crash-loops: no socket folder mounted"),
    ("plugin-evicted", "device-plugin", "0", "no device-plugin Pod on lab-node-1",
     "the device plugin daemonset has no pod on lab-node-1 (desired 0)"),
    ("kernel-update", "driver", "0", "Failed to initialize NVML: Driver/library version mismatch",
     "nvidia-smi on lab-node-1 fails: driver version mismatch"),
    ("xid", "node-advertisement", "19", "XidCriticalError: Xid=79 on Device=GPU-",
     "capacity 20 but allocatable 19 on lab-node-1 - the plugin marked a GPU unhealthy"),
    # issue 40 item 7: all-balanced under MIG_STRATEGY=single (the plugin v0.19.3's words), and
    # all-disabled asked while gpu-lab/mig-drill-holder holds a MIG device (mig-parted fails)
    ("mig-strategy-mismatch", "device-plugin", "0", "more than one MIG device type present on node",
     "the device plugin's log: invalid MIG configuration under MIG_STRATEGY=single"),
    ("mig-layout-busy", "node-advertisement", "0", "nvidia.com/mig.config=all-disabled nvidia.com/mig.config.state=failed",
     "node labels say nvidia.com/mig.config.state=failed, no nvidia.com/gpu allocatable"),
]


def test_drills_break_nvidia_s_own_components(lab):
    """After the fix (containerd holds nvidia), the drills NVIDIA's components can show break
    them on lab-node-1: the kubelet posts what the plugin reports, gpu_diagnose names the layer
    quoting the component, the grader passes a right answer; from one drill to the next through
    the healthy path; reset brings every GPU back; runtime-not-loaded now stays on the stand-ins
    (and mends the last MIG drill on the way: holder gone, all-disabled, strategy mixed)."""
    assert lab.running() == ["nvidia", "runc"]
    for name, layer, allocatable, words, answer in REAL_DRILLS:
        out, counts, state = drill(lab, name)
        assert (state["node"], state["real"], state["layer"]) == (NODE, True, layer), (name, state)
        node = lab.node()["status"]
        assert node["allocatable"]["nvidia.com/gpu"] == allocatable, (name, node["allocatable"])
        if not name.startswith("mig-"):     # a MIG layout's plugin registers other resources
            assert node["capacity"]["nvidia.com/gpu"] == "20", (name, node["capacity"])
        pod = json.loads(lab.kubectl("-n", "gpu-drill", "get", "pod", "cuda-drill", "-o", "json").stdout)
        scheduled = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"][0]
        assert scheduled["status"] == "False" and pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": NODE}
        first, layers = diagnosed(lab)
        assert first == layer, (name, first, layers[first]["next"] if first else None)
        assert words in json.dumps(layers[layer]) , (name, layers[layer])
        ok, text = graded(lab, name, layer, answer)
        assert ok, text
        if name == "plugin-no-mount":
            out, counts, _ = drill(lab, name)
            assert counts["changed"] == 0, out.stdout[-3000:]
            out, counts, _ = drill(lab, "plugin-evicted", "--check")
            assert counts["changed"] > 0 and json.loads((lab.state / "drill.json").read_text())["drill"] == name
    assert "nvidia.com/gpu.deploy.device-plugin" in lab.node()["metadata"]["labels"]
    out, _, state = drill(lab, "runtime-not-loaded")
    assert (state["node"], state["real"]) == ("lab-node-0", False)
    assert "unloading it would undo your fix" in flat(out.stdout)
    assert lab.node()["status"]["allocatable"]["nvidia.com/gpu"] == "20"    # the MIG drill mended on the way
    assert lab.node()["metadata"]["labels"]["nvidia.com/mig.config.state"] == "success"
    out, _, state = drill(lab, "reset")
    node = lab.node()["status"]
    assert node["allocatable"]["nvidia.com/gpu"] == "20" and state["drill"] == ""
    out, counts, _ = drill(lab, "reset")
    assert counts["changed"] == 0, out.stdout[-3000:]


def test_nvidia_ctk_s_drop_in_on_the_real_node_restart_and_look(lab):
    """Issue 30 item 5 on the node itself: back in the incident's end state (step 2's drop-in,
    containerd with runc only), NVIDIA's nvidia-ctk configures the node's containerd - its
    drop-in, the seed's file name. Nothing changes in the running daemon (nvidia-ctk restarts
    nothing); containerd_merge predicts what the restart loads; the reboot loads exactly that."""
    play("lab.yml", "--tags", "step2", *lab.extra)
    assert lab.running() == ["runc"]
    # one node-exec: each one makes the node's /etc/containerd from the lab folder first
    out = sh(lab.node_dir / "bin/node-exec", "sh", "-c",
             "nvidia-ctk runtime configure --runtime=containerd --config=/etc/containerd/config.toml"
             " --drop-in-config=/etc/containerd/conf.d/99-nvidia.toml >&2 && cat /etc/containerd/conf.d/99-nvidia.toml")
    assert "It is recommended that containerd daemon be restarted" in out.stderr
    written = out.stdout
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime"' in written and "runtimes.runc" in written
    assert lab.running() == ["runc"]                        # written, not loaded
    # the trainee takes NVIDIA's file as theirs (the node's /etc is made from the lab folder)
    (lab.root / "etc/containerd/conf.d/99-nvidia.toml").write_text(written)
    # containerd_merge, as an ops team calls it on a copy of a node's /etc (root: the lab folder)
    judged = sh(ANSIBLE, "localhost", "-i", "inventory/hosts.yml", "-m", "containerd_merge", "-a",
                "path=%s root=%s containerd_version=1.6" % (lab.root / "etc/containerd/config.toml", lab.root),
                cwd=ROOT, env=dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
                                   ANSIBLE_LOAD_CALLBACK_PLUGINS="1"))
    predicted = json.loads(judged.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]["predicted_runtimes"]
    assert predicted == ["nvidia", "runc"], predicted
    # the sentinel: a correct drop-in breaks nothing, yet the restart is still pending
    lab.sentinel_says("False", "True", "loaded: runc; next start: nvidia, runc (")
    play("playbooks/reboot.yml", *lab.extra)                # the gate lets it through
    assert lab.ready() == "True" and lab.running() == predicted


def test_containerd_2_keeps_runc_and_loads_nvidia(lab):
    """The seed's two files on containerd 2.2.0: the tables deep-merge, the node stays Ready."""
    out, _ = play("lab.yml", "-e", "lab_node_containerd=2.2.0", *lab.extra)   # back to the seed's files
    assert lab.running() == ["runc"]
    assert "runtimes.runc" not in (lab.root / "etc/containerd/conf.d/99-nvidia.toml").read_text()
    # the sentinel asks containerd 2.2.0's own config dump: runc kept, nvidia pending
    lab.sentinel_says("False", "True", "loaded: runc; next start: nvidia, runc (runtimes differ; containerd 2.2.0")
    play("playbooks/reboot.yml", "-e", "lab_node_containerd=2.2.0", *lab.extra)
    assert lab.ready() == "True" and lab.running() == ["nvidia", "runc"]
    assert lab.node()["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://2.2.0")


def _node_address(cluster, state_dir):
    """The node's host-side address as roles/real_node/vars/main.yml derives it (setup only)."""
    key = "%s|%s" % (cluster, os.path.realpath(str(state_dir)))
    block = int(hashlib.sha1(key.encode()).hexdigest()[8:12], 16) % 16384
    return "10.213.%d.%d" % (block * 4 // 256, block * 4 % 256 + 1)


def test_two_labs_of_one_name_side_by_side_and_one_goes_alone(lab, tmp_path):
    """A second lab with the same cluster name under another home gets names of its own; an
    address of it already held on this machine is refused with a clear message, never taken
    over; tearing the second down leaves the first exactly as it was."""
    home = tmp_path / "other-home"
    home.mkdir()
    env = {"HOME": str(home)}
    other_state = home / ".local/state/gpu-incident-lab" / lab.name
    before = {name: (lab.node_dir / name).read_text() for name in ("holder.pid", "containerd.pid", "kubelet.pid")}
    address = _node_address(lab.name, other_state / "node")
    dummy = "giltest%s" % uuid.uuid4().hex[:6]   # a veth pair of the test's own (no traffic)
    sh("ip", "link", "add", dummy, "type", "veth", "peer", "name", dummy + "p")
    try:
        sh("ip", "addr", "add", address + "/30", "dev", dummy)
        out, counts = play("lab.yml", *lab.extra, check=False, env=env)
        assert counts["failed"] == 1
        assert "are already on interface %s" % dummy in flat(out.stdout), out.stdout[-3000:]
    finally:
        sh("ip", "link", "del", dummy)
    try:
        play("lab.yml", *lab.extra, env=env)
        other = json.loads(sh(BIN / "kubectl", "--kubeconfig", home / ".kwok/clusters" / lab.name / "kubeconfig.yaml",
                              "get", "node", NODE, "-o", "json").stdout)
        assert [c["status"] for c in other["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
        other_id = (other_state / "node/node.env").read_text().split("CLUSTER_ID=")[1].split()[0]
        assert other_id != lab.env()["CLUSTER_ID"]
        assert {"gil-" + other_id, "gil-" + lab.env()["CLUSTER_ID"]} <= set(sh("ip", "netns", "list").stdout.split())
    finally:
        play("playbooks/teardown.yml", *lab.extra, env=env)
    assert "gil-" + other_id not in sh("ip", "netns", "list").stdout
    assert "gil-" + lab.env()["CLUSTER_ID"] in sh("ip", "netns", "list").stdout
    assert {name: (lab.node_dir / name).read_text() for name in before} == before
    assert all(pathlib.Path("/proc/%s" % pid.strip()).exists() for pid in before.values())
    assert lab.ready() == "True"


def test_teardown_leaves_nothing(lab):
    env = lab.env()
    graded_before = (lab.state / "grade-report.json").read_bytes()
    play("playbooks/teardown.yml", *lab.extra)
    # the lab's records no longer describe a running lab: kept under ended/<time>/, not in a new lab's way
    assert not (lab.state / "grade-report.json").exists() and not (lab.state / "drill.json").exists()
    assert [p.read_bytes() for p in lab.state.glob("ended/*/grade-report.json")] == [graded_before]
    cid = env["CLUSTER_ID"]
    assert "gil-" + cid not in sh("ip", "netns", "list").stdout
    assert "gil%sh" % cid not in sh("ip", "link").stdout
    assert not list(pathlib.Path("/sys/fs/cgroup").glob("*/gpu-incident-lab-%s" % cid))
    assert str(lab.node_dir) not in pathlib.Path("/proc/self/mountinfo").read_text()
    assert sh("pgrep", "-f", str(lab.node_dir), check=False).returncode == 1
    # what the node held is gone with it, its logs stay
    assert not (lab.node_dir / "containerd-root").exists() and not (lab.node_dir / "node.env").exists()
    assert (lab.node_dir / "containerd.log").exists()
