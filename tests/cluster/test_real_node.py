"""lab-node-1 as a real node: a real containerd 1.6.20 and kubelet on this machine.

One lab (its own cluster name and lab folder) is brought up once with `lab.yml`; the tests then
drive it in order, as a trainee would: the incident's end state, logs/exec, the handler that
would have prevented it, kill -9 and rerun, the next reboot (NotReady for real), the diagnosis
of it, the graded fix, nvidia-ctk's drop-in, containerd 2.2.0 on the same files, and a teardown
that leaves nothing. NVIDIA's GPU stack on the node (step 7's plugin, faults, MIG, the GPU Pods,
the drills) is driven on a lab of its own: tests/cluster/test_real_node_gpu.py. Skipped where the
machine cannot run a real node (the lab then says why and uses kwok).
"""
import hashlib
import json
import os
import pathlib
import re
import signal
import socket
import ssl
import struct
import sys
import urllib.error
import urllib.request
import uuid

import pytest

from real_node_lab import (  # tests/cluster/real_node_lab.py: the lab both real-node modules drive
    ANSIBLE, BIN, FIXED_DROPIN, NODE, ROOT, RUNTIME_CHECK, diagnosed, drill, fixed, flat, graded, plain, play, real_lab, sh)
sys.path.insert(0, str(ROOT / "tools"))
from headless_chromium import Chromium, binary  # noqa: E402
sys.path.insert(0, str(ROOT / "tests"))
import versions  # noqa: E402  (tests/versions.py: the pins of toolchain/*/go.mod)
import doc_blocks  # noqa: E402  (tests/doc_blocks.py: docs/toolkit.md's block marked for this module)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with real_lab(tmp_path_factory) as made:
        yield made


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


def test_nvidia_s_toolkit_installer_as_the_operator_runs_it_writes_and_does_not_restart(lab):
    """Issue 49: NVIDIA's own installer (nvidia-ctk-installer, built here) as the GPU Operator's
    toolkit DaemonSet Pod on lab-node-1 with RUNTIME_RESTART_MODE=none - the incident made by the
    real component: its drop-in written into the node's /etc/containerd (the lab folder, saved first),
    the Pod Ready, containerd not restarted, the sentinel's RuntimeRestartPending True (NVIDIA's
    drop-in keeps runc, so the next start serves CRI); a rerun changes nothing; state=absent deletes
    the DaemonSet - the installer's TERM cleanup removes its drop-in - and puts the lab folder's
    files back byte for byte."""
    # docs/toolkit.md's commands for the real node, as printed (the lab's own names added)
    block = [b for b in doc_blocks.parse((ROOT / "docs/toolkit.md").read_text(), "docs/toolkit.md")
             if b.by == "tests/cluster/test_real_node.py"]
    deploy, delete = [line.split()[1:] for line in block[0].text.splitlines()]
    assert deploy == ["playbooks/toolkit.yml", "-e", "toolkit_target=node"] and delete == deploy + ["-e", "state=absent"]
    folder = lab.root / "etc/containerd"
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    running = lab.running()
    # its drill needs the node after the reboot fix: refused here (runc alone), nothing changed
    out, counts = play("playbooks/drill.yml", "-e", "drill=toolkit-no-restart", *lab.extra, check=False)
    said = plain(out.stdout)
    assert counts["failed"] == 1 and counts["changed"] == 0, out.stdout[-3000:]
    assert ("needs that node after the reboot fix, its GPU half up: its running containerd has only runc loaded - the "
            "incident itself; do the reboot fix first" in said and "Nothing was changed." in said), said[-2000:]
    out, counts = play(*deploy, *lab.extra)
    said = flat(out.stdout)
    assert 'msg="Flushing config to /runtime/config-dir.d/99-nvidia.toml"' in said, said[-2000:]
    assert 'msg="Skipping restart of containerd due to --restart-mode=none"' in said
    pods = json.loads(lab.kubectl("-n", "gpu-operator", "get", "pods", "-l", "app=nvidia-container-toolkit-daemonset",
                                  "-o", "json").stdout)["items"]
    assert [p["spec"]["nodeName"] for p in pods] == [NODE] and pods[0]["spec"]["hostPID"]
    assert [c["status"] for c in pods[0]["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
    dropin = (folder / "conf.d/99-nvidia.toml").read_text()
    assert 'default_runtime_name = "nvidia"' in dropin and 'containerd.runtimes.runc]' in dropin
    assert lab.running() == running                         # containerd was not restarted
    now = lab.sentinel_says("False", "True", "loaded: %s; next start: nvidia, nvidia-cdi, nvidia-legacy, runc (" %
                            ", ".join(running), timeout=90)
    assert now["RuntimeBreaksOnRestart"][1] == "the next start of containerd serves CRI with its default runtime"
    out, counts = play(*deploy, *lab.extra)
    assert counts["changed"] == 0, out.stdout[-3000:]
    out, counts = play(*delete, *lab.extra)
    said = flat(out.stdout)
    # NVIDIA's cleanup removed its drop-in (your drop-in was in its place: put back); mode none: no restart
    assert "(TERM for the installer: its cleanup)" in said and "put back conf.d/99-nvidia.toml" in said, said[-2000:]
    assert "containerd runs %s, as before the installer" % ", ".join(running) in said
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert "daemonset.apps/nvidia-container-toolkit-daemonset" not in lab.kubectl(
        "-n", "gpu-operator", "get", "daemonsets", "-o", "name").stdout.split()
    lab.sentinel_says("True", "True", "loaded: runc; next start: nvidia (", timeout=90)   # the lab's own state again


def test_the_installers_sighup_ends_containerd_and_its_supervisor_brings_it_back(lab):
    """Issue 49, restart mode signal: NVIDIA's installer sends containerd SIGHUP (the Pod found
    through the socket's peer, hostPID); containerd 1.6.20 does not handle SIGHUP and exits; the
    node's supervisor, as containerd.service's Restart=always, starts it again after RestartSec and
    it loads what the installer wrote. Deleting the DaemonSet: the installer's cleanup removes its
    drop-in and signals again; the lab folder comes back byte for byte. systemd is refused."""
    folder = lab.root / "etc/containerd"
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    out, counts = play("playbooks/toolkit.yml", "-e", "toolkit_target=node", "-e", "toolkit_restart_mode=signal", *lab.extra)
    said = flat(out.stdout)
    assert 'msg="Sending SIGHUP signal to containerd"' in said, said[-3000:]
    log = (lab.node_dir / "containerd.log").read_text()
    # 129: ended by SIGHUP (128 + 1) - containerd 1.6.20 does not handle it
    assert re.search(r"supervise\.sh: containerd exited with status 129; Restart=always: starting it again in 5 s", log), log[-2000:]
    assert lab.running() == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]      # the installer's files, loaded
    assert lab.wait("lab-node-1 Ready with containerd back", lambda: lab.ready() == "True", 120)
    lab.sentinel_says("False", "False", timeout=90)
    out, counts = play("playbooks/toolkit.yml", "-e", "toolkit_target=node", "-e", "toolkit_restart_mode=systemd", *lab.extra,
                       check=False)
    assert counts["failed"] == 1 and "node has no systemd" in flat(out.stdout)
    # NVIDIA's cleanup does not always restart containerd (its SIGHUP can reach the installer
    # itself - the next test; or the installer is not running when TERM comes). Forced here: the
    # installer stopped (SIGSTOP) - TERM waits, the grace period ends in SIGKILL, no cleanup runs.
    crictl = [lab.node_dir / "bin/crictl"]
    ids = lab.wait("the installer's container running", lambda: sh(*crictl, "ps", "--name", "nvidia-container-toolkit-ctr",
                                                                  "-q").stdout.split(), 60)
    pid = json.loads(sh(*crictl, "inspect", ids[0]).stdout)["info"]["pid"]
    assert pathlib.Path("/proc/%d/cmdline" % pid).read_bytes().startswith(b"/usr/bin/nvidia-ctk-installer")
    os.kill(pid, signal.SIGSTOP)
    out, counts = play("playbooks/toolkit.yml", "-e", "toolkit_target=node", "-e", "state=absent", *lab.extra)
    said = plain(out.stdout)
    assert ("NVIDIA's cleanup did not restart containerd - it still ran nvidia, nvidia-cdi, nvidia-legacy, runc with the "
            "installer's files left: changed conf.d/99-nvidia.toml" in said), said[-3000:]
    assert "the play restarted it as it had started before the installer (incident): it runs runc" in said
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert not (lab.node_dir / "containerd.restart").exists()
    assert lab.running() == ["runc"]                      # the node as before the installer
    lab.sentinel_says("True", "True", "loaded: runc; next start: nvidia (", timeout=90)   # the lab's own state again
    out, counts = play("playbooks/toolkit.yml", "-e", "toolkit_target=node", "-e", "state=absent", *lab.extra)
    assert counts["changed"] == 0 and not (lab.state / "toolkit/saved-etc-containerd.node.json").exists()
    assert not (lab.state / "toolkit").exists()           # the save's folder went with the save


def test_nvidia_s_sighup_finds_pid_0_when_containerd_speaks_first(lab):
    """Why NVIDIA's installer sometimes signals itself (issue 47's CI failure of this file): its
    SignalContainerd (cmd/nvidia-ctk-installer/container/runtime/containerd/containerd_linux.go)
    dials containerd's socket, *then* sets SO_PASSCRED, reads one message and sends SIGHUP to the
    pid in its credentials. The kernel attaches a sender's credentials to data only if the reader
    had SO_PASSCRED when it was sent; containerd's gRPC server writes its HTTP/2 settings as soon
    as it accepts - so when containerd speaks first, the pid read is 0, and kill(0, SIGHUP) signals
    the installer's own process group: "Signal received, exiting early" during its setup, and a
    cleanup that "succeeds" with containerd never restarted. Shown here with the node's containerd."""
    import select
    import pwd
    pin = "github.com/NVIDIA/nvidia-container-toolkit@v" + versions.go_mod_version(
        "nvidia-container-toolkit", "github.com/NVIDIA/nvidia-container-toolkit")
    # the lab's pinned module, where its build put it (the user's HOME: the tests run in their own)
    module = json.loads(sh("go", "mod", "download", "-json", pin, cwd=ROOT / "toolchain/nvidia-container-toolkit",
                           env=dict(os.environ, HOME=pwd.getpwuid(os.getuid()).pw_dir), timeout=300).stdout)
    code = (pathlib.Path(module["Dir"]) / "cmd/nvidia-ctk-installer/container/runtime/containerd/containerd_linux.go").read_text()
    order = [code.index(s) for s in ('net.Dial("unix", socket)', "syscall.SO_PASSCRED, 1", "ReadMsgUnix(nil, oob)",
                                     "syscall.Kill(int(ucred.Pid), syscall.SIGHUP)")]
    assert order == sorted(order), "NVIDIA's SignalContainerd no longer dials before SO_PASSCRED: %s" % order
    # the socket by its folder's descriptor: the tests' folders are deeper than AF_UNIX's 108 bytes
    folder = os.open(str(lab.node_dir / "run-containerd"), os.O_PATH)
    path = "/proc/self/fd/%d/containerd.sock" % folder
    containerd = int((lab.node_dir / "containerd.pid").read_text())

    def peer_pid(passcred_first):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            if passcred_first:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            conn.connect(path)
            if not passcred_first:   # as NVIDIA's code, once containerd has written (its HTTP/2 settings)
                assert select.select([conn], [], [], 10)[0], "containerd wrote nothing in 10 s"
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            conn.sendmsg([b""])
            data, anc, _, _ = conn.recvmsg(1024, socket.CMSG_SPACE(12))
            creds = [c for level, kind, c in anc if (level, kind) == (socket.SOL_SOCKET, socket.SCM_CREDENTIALS)]
            assert data and creds, (data, anc)
            return struct.unpack("iII", creds[0][:12])[0]
    try:
        assert peer_pid(passcred_first=True) == containerd
        assert peer_pid(passcred_first=False) == 0         # kill(0, SIGHUP): the caller's own process group
    finally:
        os.close(folder)


def test_the_safe_rollout_restarts_containerd_only_after_the_sentinel_and_the_gate(lab):
    """Issue 49 item 5, playbooks/toolkit-rollout.yml: NVIDIA's installer with restart mode none,
    the sentinel's judgment of what it wrote (NVIDIA's drop-in keeps runc: the next start serves
    CRI), the gate lets the restart through, and the play - not the installer - restarts containerd,
    which loads the installer's runtimes. state=absent then finds containerd running other than
    before the installer (mode none's cleanup restarts nothing) and gives the node back as it was."""
    folder = lab.root / "etc/containerd"
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert lab.running() == ["runc"]
    out, _ = play("playbooks/toolkit-rollout.yml", *lab.extra)
    said = plain(out.stdout)
    assert 'msg="Skipping restart of containerd due to --restart-mode=none"' in said, said[-3000:]
    assert ("containerd restarted after the gate let it: it runs nvidia, nvidia-cdi, nvidia-legacy, runc (default nvidia)"
            in said), said[-3000:]
    assert lab.running() == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
    lab.sentinel_says("False", "False", timeout=90)
    out, _ = play("playbooks/toolkit.yml", "-e", "toolkit_target=node", "-e", "state=absent", *lab.extra)
    said = plain(out.stdout)
    assert "NVIDIA's cleanup did not restart containerd - it still ran nvidia, nvidia-cdi, nvidia-legacy, runc" in said, said[-3000:]
    assert "the play restarted it as it had started before the installer (incident): it runs runc" in said
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert lab.running() == ["runc"]
    lab.sentinel_says("True", "True", "loaded: runc; next start: nvidia (", timeout=90)


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


def test_drill_toolkit_no_restart_nvidia_s_installer_after_the_fix(lab):
    """Issue 49's drill on the node after the reboot fix (containerd runs nvidia and runc):
    NVIDIA's installer as the GPU Operator runs it, RUNTIME_RESTART_MODE=none - its drop-in written,
    its Pod Ready, containerd not restarted; the drill Pod of the Operator's RuntimeClass nvidia-cdi
    is refused in containerd's own words; gpu_diagnose names the container runtime quoting the
    installer; the grader passes an answer naming the restart. A rerun changes nothing; reset
    deletes the installer (its TERM cleanup) and gives the lab folder's files and containerd's
    runtimes back as they were. (A checked reset is test_dra.py's: each run here costs ~45 s.)"""
    if lab.running() != ["nvidia", "runc"]:      # run alone (-k toolkit): the node after the fix first
        fixed(lab)
    folder = lab.root / "etc/containerd"
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    out, _, state = drill(lab, "toolkit-no-restart")
    assert (state["drill"], state["node"], state["real"], state["layer"]) == ("toolkit-no-restart", NODE, True, "container-runtime")
    assert 'msg="Skipping restart of containerd due to --restart-mode=none"' in flat(out.stdout), out.stdout[-3000:]
    assert lab.running() == ["nvidia", "runc"]               # written, not loaded
    assert "nvidia-cdi" in (folder / "conf.d/99-nvidia.toml").read_text()
    pod = json.loads(lab.kubectl("-n", "gpu-drill", "get", "pod", "cuda-drill", "-o", "json").stdout)
    assert pod["spec"]["runtimeClassName"] == "nvidia-cdi" and pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": NODE}

    def refused():
        events = lab.kubectl("-n", "gpu-drill", "get", "events", "--field-selector",
                             "involvedObject.name=cuda-drill", "-o", "json").stdout
        return 'no runtime for \\"nvidia-cdi\\" is configured' in events
    lab.wait("containerd to refuse the drill Pod's sandbox (no nvidia-cdi runtime)", refused, 60)
    first, layers = diagnosed(lab)
    said = json.dumps(layers["container-runtime"])
    assert first == "container-runtime" and "a restart is pending" in layers["container-runtime"]["next"], said[-2000:]
    assert "the toolkit installer on lab-node-1 wrote containerd's config and did not restart it" in said
    assert "Skipping restart of containerd due to --restart-mode=none" in said
    ok, text = graded(lab, "toolkit-no-restart", "container-runtime",
                      "the toolkit Pod's log says Skipping restart of containerd due to --restart-mode=none; "
                      "crictl info lists nvidia, runc - no nvidia-cdi")
    assert ok, text
    out, counts, _ = drill(lab, "toolkit-no-restart")
    assert counts["changed"] == 0, out.stdout[-3000:]
    out, _, state = drill(lab, "reset")
    assert state["drill"] == "" and "(TERM for the installer: its cleanup)" in flat(out.stdout), out.stdout[-3000:]
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert lab.running() == ["nvidia", "runc"] and not (lab.state / "toolkit").exists()
    assert "nvidia-cdi" not in lab.kubectl("get", "runtimeclasses", "-o", "name").stdout


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
