"""playbooks/support-bundle.yml against a throw-away real control plane and a "GPU node" reached
by a local connection with fake node tools: the exact layout, the redaction (no Secret, no env
value, no ConfigMap value outside the GPU stack, no last-applied copy), the index, a rerun that
keeps the earlier bundle, force, and --check writing nothing.

Redaction as an attacker tests it (issue 32): secrets planted where they turn up - container args
(--password=, --api-token VALUE, a URL with user:password), annotations, a GPU-stack ConfigMap
(kept unredacted by the object rules) whose YAML holds a token, a user rule's literal, and on the
node registry auth in `crictl info` and `containerd config dump` (every field of auth, auths and
headers) and log lines with tokens - then every byte of the bundle folder and of its archive
(as sent, and unpacked) is searched for each planted value. A bad user regex stops the run
before any node command runs.

The node tools are fakes (this machine has no GPU): shell scripts on PATH that print what the
real ones print in shape; the test checks that each file holds exactly what its command printed
(redacted where it holds secrets) and that the commands got the options the role was given
(crictl's endpoint, containerd's config). Pod logs: kwok serves none, so the logs' redaction is
tested with the collector over planted logs (tests/unit/bundle/test_redact_bundle.py).
"""
import gzip
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import uuid

import pytest

from ansible.module_utils.kube.client import condition
from lab_testing import wait_for as wait  # tests/lab_testing.py: the one bounded wait

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests/bundle_corpus"))
import plant_secrets  # noqa: E402

MARKER = "<redacted>"
LICENSE = "lic-PLANTED-user-rule-0042"
SMI = """Tue Dec  1 22:00:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
|   0  NVIDIA A100-SXM4-40GB          On  |   00000000:07:00.0 Off |                    0 |
+-----------------------------------------+------------------------+----------------------+
"""
QUERY = "0, NVIDIA A100-SXM4-40GB, GPU-2ee7d4c4-8c5b-4e6d-9a8b-1c2d3e4f5a6b, 550.54.15, 40960 MiB\n"
CRICTL = '{"status": {"conditions": []}, "config": {"containerd": {"defaultRuntimeName": "runc", "runtimes": {"runc": {}}}}}'
DUMP = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
LGIP = "+-----------------------------------------------------------------------------+\n| GPU instance profiles:                                                      |\n"
DMESG = "[   12.345678] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n"
FM = ("* nvidia-fabricmanager.service - NVIDIA fabric manager service\n"
      "     Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled)\n"
      "     Active: failed (Result: exit-code)\n")
NODE_FILES = {"nvidia-smi.txt": SMI, "nvidia-smi-query.csv": QUERY, "crictl-info.json": CRICTL + "\n",
              "containerd-config-dump.toml": DUMP, "device-plugins.txt": "kubelet.sock\nnvidia-gpu.sock\n",
              "dmesg.txt": DMESG, "fabric-manager.txt": FM, "mig-lgip.txt": LGIP, "mig-lgipp.txt": LGIP,
              "containerd.log": "time=\"2026-12-01T22:00:00Z\" level=info msg=\"starting containerd\"\n"}
# the node's registry credentials, as containerd 1.6 prints them (tests/bundle_corpus/plant_secrets.py)
SECRET_CRICTL = json.dumps({"status": {"conditions": []}, "config": {
    "containerd": {"defaultRuntimeName": "runc", "runtimes": {"runc": {}}},
    "registry": plant_secrets.registry_json()}}, indent=2) + "\n"
SECRET_DUMP = DUMP + plant_secrets.registry_toml()
SECRET_LOG = NODE_FILES["containerd.log"] + (
    'time="2026-12-01T22:00:01Z" level=info msg="pull helper" env="REGISTRY_PASSWORD=%s"\n'
    "GET /v2/ Authorization: Bearer %s\nlicense %s\n" % (
        plant_secrets.PLANTED["log-password"], plant_secrets.PLANTED["log-bearer"], LICENSE))
NODE_PLANTED = {k: plant_secrets.PLANTED[k] for k in (
    "registry-password", "registry-auth", "registry-identitytoken", "registry-auths-user",
    "registry-auths-password", "registry-header", "log-password", "log-bearer")}


def script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def fake_node(tmp, secrets=False):
    """Fake node tools; with secrets, crictl info and config dump carry registry auth and the
    containerd log tokens. Every call of a tool is recorded in node/calls."""
    tools, state = tmp / "tools", tmp / "node"
    tools.mkdir()
    (state / "device-plugins").mkdir(parents=True)
    for sock in ("kubelet.sock", "nvidia-gpu.sock"):
        (state / "device-plugins" / sock).write_text("")
    (state / "containerd.log").write_text(SECRET_LOG if secrets else NODE_FILES["containerd.log"])
    (state / "config.toml").write_text(DUMP)
    for name, text in (("smi.txt", SMI), ("query.csv", QUERY), ("lgip.txt", LGIP), ("dmesg.txt", DMESG),
                       ("fm.txt", FM), ("crictl.json", SECRET_CRICTL if secrets else CRICTL + "\n"),
                       ("dump.toml", SECRET_DUMP if secrets else DUMP)):
        (state / name).write_text(text)
    script(tools / "nvidia-smi", """case "$*" in
  --query-gpu=index,name,uuid,driver_version,memory.total*) cat {s}/query.csv ;;
  "mig -lgip"|"mig -lgipp") cat {s}/lgip.txt ;;
  "") cat {s}/smi.txt ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
""".format(s=state))
    # answers only on the endpoint the role was given, as a CRI client on the wrong socket fails
    script(tools / "crictl", """[ "$1 $2 $3" = "--runtime-endpoint unix://{s}/containerd.sock info" ] && cat {s}/crictl.json && exit 0
echo 'FATA[0000] validate service connection: ... no such file or directory' >&2; exit 1
""".format(s=state))
    script(tools / "containerd", """[ "$*" = "--config {s}/config.toml config dump" ] && cat {s}/dump.toml && exit 0
echo "containerd: unexpected $*" >&2; exit 1
""".format(s=state))
    script(tools / "dmesg", "cat %s/dmesg.txt\n" % state)
    script(tools / "systemctl", '[ "$*" = "status --no-pager nvidia-fabricmanager" ] && cat %s/fm.txt && exit 3\nexit 4\n' % state)
    script(tools / "journalctl", "echo 'journalctl should not be asked' >&2; exit 1\n")
    for tool in tools.iterdir():   # record every call (a bad rule must stop the run before any)
        tool.write_text(tool.read_text().replace("#!/bin/sh\n", '#!/bin/sh\necho "$0 $*" >> %s/calls\n' % state, 1))
    return tools, state


def run(args, tools, timeout=300):
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", PATH="%s:%s" % (tools, os.environ["PATH"]))
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook")] + args,
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return out.returncode, " ".join(out.stdout.split()), out.stdout + out.stderr


@pytest.fixture
def world(kube, namespace):
    tag = uuid.uuid4().hex[:8]
    stack_ns = "gpu-stack-" + tag
    kube.create("/api/v1/namespaces", {"metadata": {"name": stack_ns}})
    wait("default ServiceAccount", lambda: kube.get("/api/v1/namespaces/%s/serviceaccounts/default" % stack_ns,
                                                    missing_ok=True))
    node = "bundle-" + tag
    kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": node, "annotations": {"kwok.x-k8s.io/node": "fake"},
        "labels": {"type": "kwok", "kubernetes.io/hostname": node, "nvidia.com/gpu.present": "true"}}})
    secrets = {k: "%s-%s" % (k, tag) for k in ("secret-data", "env-value", "cm-value", "ds-env", "applied",
                                                "arg-pass", "arg-token", "url-user", "url-pass", "cmd-bearer",
                                                "annotation-token", "annotation-json", "stack-token", "pem-body")}
    secrets["aws-id"] = ("AKIA" + tag.upper() + "PLANTED0")[:20]
    secrets["jwt"] = "eyJhbGciOiJSUzI1NiJ9.eyJ%sX2p3dA.c2lnLXBsYW50ZWQ" % tag
    secrets["license"] = LICENSE
    kube.create("/api/v1/namespaces/%s/secrets" % namespace, {"metadata": {"name": "creds"},
                                                              "stringData": {"token": secrets["secret-data"]}})
    kube.create("/api/v1/namespaces/%s/configmaps" % namespace, {"metadata": {"name": "app-settings", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps({"data": {"password": secrets["applied"]}})}},
        "data": {"password": secrets["cm-value"]}})
    kube.create("/api/v1/namespaces/%s/configmaps" % stack_ns, {"metadata": {"name": "plugin-config"},
                                                                "data": {"config.yaml": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\nmetrics:\n  token: %s\n" % secrets["stack-token"]}})
    # a Pod that prints planted secrets (its command), and carries them in args and annotations
    prints = ("echo 'Authorization: Bearer %s'; echo AWS_ACCESS_KEY_ID=%s; echo %s; "
              "printf -- '-----BEGIN PRIVATE KEY-----\\n%s\\n-----END PRIVATE KEY-----\\n'; exec train"
              % (secrets["cmd-bearer"], secrets["aws-id"], secrets["jwt"], secrets["pem-body"]))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps({"env": secrets["applied"]}),
        "example.com/api-token": secrets["annotation-token"], "example.com/license": secrets["license"],
        "example.com/settings": json.dumps({"db": {"password": secrets["annotation-json"]}})}},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "containers": [{
            "name": "cuda", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
            "command": ["sh", "-c", prints],
            "args": ["--db-password=" + secrets["arg-pass"], "--api-token", secrets["arg-token"], "--dsn",
                     "postgres://%s:%s@db.corp.example:5432/train" % (secrets["url-user"], secrets["url-pass"])],
            "resources": {"limits": {"nvidia.com/gpu": "1"}},
            "env": [{"name": "API_TOKEN", "value": secrets["env-value"]},
                    {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                    {"name": "FROM_CM", "valueFrom": {"configMapKeyRef": {"name": "app-settings", "key": "password"}}}]}]}}
    kube.create("/api/v1/namespaces/%s/pods" % namespace, pod)
    kube.create("/apis/apps/v1/namespaces/%s/daemonsets" % stack_ns, {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nvidia-device-plugin-daemonset"},
        "spec": {"selector": {"matchLabels": {"app": "nvidia-device-plugin-daemonset"}},
                 "template": {"metadata": {"labels": {"app": "nvidia-device-plugin-daemonset"}}, "spec": {
                     "nodeSelector": {"kubernetes.io/hostname": node},
                     "containers": [{"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
                                     "env": [{"name": "PASSWORD", "value": secrets["ds-env"]}],
                                     "volumeMounts": [{"name": "cfg", "mountPath": "/config"}]}],
                     "volumes": [{"name": "cfg", "configMap": {"name": "plugin-config"}}]}}}})
    wait("the scheduler's verdict on trainer", lambda: condition(
        kube.get("/api/v1/namespaces/%s/pods/trainer" % namespace), "PodScheduled").get("status") == "False")
    wait("the plugin Pod", lambda: kube.items("/api/v1/namespaces/%s/pods" % stack_ns))
    yield {"ns": namespace, "stack_ns": stack_ns, "node": node, "secrets": secrets}
    for path in ("/api/v1/nodes/" + node, "/api/v1/namespaces/" + stack_ns):
        kube.request("DELETE", path)


def inventory(tmp_path, node, state):
    (tmp_path / "nodes.yml").write_text(json.dumps({"all": {"children": {"gpu_nodes": {"hosts": {node: {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpu_support_bundle_crictl_endpoint": "unix://%s/containerd.sock" % state,
        "gpu_support_bundle_containerd_config": "%s/config.toml" % state,
        "gpu_support_bundle_containerd_log": "%s/containerd.log" % state,
        "gpu_support_bundle_kubelet_unit": "",
        "gpu_support_bundle_socket_dir": "%s/device-plugins" % state}}}}}}))
    return ["-i", "inventory/hosts.yml", "-i", str(tmp_path / "nodes.yml"), "playbooks/support-bundle.yml"]


def test_a_bad_redaction_rule_stops_the_run_before_anything_is_collected(tmp_path, cluster):
    tools, state = fake_node(tmp_path, secrets=True)
    dest = tmp_path / "bundle"
    rc, out, raw = run(inventory(tmp_path, "gpu-node-x", state) + [
        "-e", "lab_kubeconfig=" + cluster, "-e", "lab_real_node=false", "-e", "dest=%s" % dest,
        "-e", json.dumps({"gpu_support_bundle_redact": [{"name": "ticket-ids", "regex": "TICKET-([0-9]+"}]})], tools)
    assert rc != 0, raw[-3000:]
    assert "rule ticket-ids" in out and "does not compile" in out and "missing ), unterminated subpattern" in out, raw[-3000:]
    assert "Traceback" not in raw and "TICKET-([0-9]+" not in raw       # the rule's pattern is never echoed
    assert not (state / "calls").exists() and not dest.exists() and not (tmp_path / "bundle.tar.gz").exists()


def test_support_bundle_from_a_live_cluster_and_a_node(tmp_path, cluster, world, module_runner):
    tools, state = fake_node(tmp_path, secrets=True)
    dest = tmp_path / "bundle"
    base = inventory(tmp_path, world["node"], state) + [
        "-e", "lab_kubeconfig=" + cluster, "-e", "pod=%s/trainer" % world["ns"],
        "-e", "lab_real_node=false",
        "-e", json.dumps({"gpu_support_bundle_stack_namespaces": [world["stack_ns"]],
                          "gpu_support_bundle_redact": [{"name": "license", "literal": LICENSE}]})]
    planted = dict(world["secrets"], **NODE_PLANTED)

    # --check: reads, writes nothing
    rc, out, raw = run(base + ["-e", "dest=%s" % dest, "--check"], tools)
    assert rc == 0, raw[-3000:]
    assert not dest.exists() and "would be written to" in out

    rc, out, raw = run(base + ["-e", "dest=%s" % dest], tools)
    assert rc == 0, raw[-3000:]
    files = {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    node_dir = "nodes/%s/" % world["node"]
    expected = {"bundle.json", "cluster/nodes.json", "cluster/pods.json", "cluster/runtimeclasses.json",
                "cluster/events.json", "cluster/daemonsets.json", "cluster/configmaps.json"} | \
        {node_dir + name for name in NODE_FILES}
    assert expected <= set(files), sorted(expected - set(files))
    secret_files = ("crictl-info.json", "containerd-config-dump.toml", "containerd.log")
    for name, text in NODE_FILES.items():
        if name not in secret_files:
            assert files[node_dir + name].decode() == text, name
    # the node's registry credentials: every field hidden, the file still its format, the rest kept
    registry = json.loads(files[node_dir + "crictl-info.json"])["config"]["registry"]
    assert registry["configs"]["nvcr.io"]["auth"] == dict.fromkeys(["auth", "identitytoken", "password", "username"], MARKER)
    assert registry["auths"]["https://registry.corp.example"]["password"] == MARKER
    assert registry["headers"] == {"Authorization": [MARKER]}
    dump = files[node_dir + "containerd-config-dump.toml"].decode()
    assert dump.startswith(DUMP) and '            password = "%s"\n' % MARKER in dump
    assert 'Authorization = ["%s"]' % MARKER in dump
    log = files[node_dir + "containerd.log"].decode()
    assert log.startswith(NODE_FILES["containerd.log"]) and "REGISTRY_PASSWORD=%s" % MARKER in log
    index = json.loads(files["bundle.json"])
    assert index["format"] == "gpu-incident-lab/support-bundle" and index["nodes"] == [world["node"]]
    assert index["files"][node_dir + "kubelet.log"]["status"] == "missing"
    assert index["files"][node_dir + "fabric-manager.txt"]["rc"] == 3        # status text kept: not running
    # the Pod is on no node (Pending): its log is empty, and the index says why
    log = index["files"]["logs/%s/trainer.log" % world["ns"]]
    assert log["why"] == "asked for" and log["status"] == "collected" and "not scheduled" in log["note"], log
    assert files["logs/%s/trainer.log" % world["ns"]] == b""
    assert any(k.startswith("logs/%s/" % world["stack_ns"]) for k in index["files"])   # the plugin's Pod

    # the cluster files are what kubectl get -o json prints
    lists = {k: json.loads(v) for k, v in files.items() if k.startswith("cluster/")}
    for name, doc in lists.items():
        assert doc["kind"] == "List" and all("kind" in i and "apiVersion" in i for i in doc["items"]), name
    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in lists["cluster/pods.json"]["items"]}
    env = pods[(world["ns"], "trainer")]["spec"]["containers"][0]["env"]
    assert env[0] == {"name": "API_TOKEN", "value": "<redacted>"}
    assert env[1]["valueFrom"]["secretKeyRef"] == {"name": "creds", "key": "token"}
    assert all("managedFields" not in p["metadata"] for p in pods.values())
    events = lists["cluster/events.json"]["items"]
    assert any(e.get("reason") == "FailedScheduling" and e["involvedObject"]["name"] == "trainer" for e in events)
    cms = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in lists["cluster/configmaps.json"]["items"]}
    assert cms[(world["ns"], "app-settings")]["data"] == {"password": "<redacted>"}
    assert "replicas: 4" in cms[(world["stack_ns"], "plugin-config")]["data"]["config.yaml"]   # the GPU stack's own
    ds = [d for d in lists["cluster/daemonsets.json"]["items"] if d["metadata"]["namespace"] == world["stack_ns"]]
    assert ds[0]["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "<redacted>"

    # the Pod's args and annotations, and the GPU stack's own ConfigMap: values hidden, shape kept
    trainer = pods[(world["ns"], "trainer")]
    assert trainer["spec"]["containers"][0]["args"] == [
        "--db-password=" + MARKER, "--api-token", MARKER, "--dsn", "postgres://%s@db.corp.example:5432/train" % MARKER]
    assert trainer["spec"]["containers"][0]["image"] == "nvidia/cuda:12.4.1-base-ubuntu22.04"
    assert trainer["metadata"]["annotations"]["example.com/api-token"] == MARKER
    assert json.loads(trainer["metadata"]["annotations"]["example.com/settings"]) == {"db": {"password": MARKER}}
    assert "metrics:\n  token: %s\n" % MARKER in cms[(world["stack_ns"], "plugin-config")]["data"]["config.yaml"]

    # no secret anywhere: every byte of every file, of the archive as sent and unpacked, and of the run's output
    archive = pathlib.Path(str(dest) + ".tar.gz")
    assert oct(archive.stat().st_mode & 0o777) == "0o600"
    with tarfile.open(archive) as tar:
        assert all(m.name.split("/")[0] == "bundle" and (m.isfile() or m.isdir()) for m in tar.getmembers())
        assert {m.name[len("bundle/"):] for m in tar.getmembers() if m.isfile()} == set(files)
    blobs = dict(files, **{"bundle.tar.gz": archive.read_bytes(), "bundle.tar": gzip.decompress(archive.read_bytes()),
                           "ansible-playbook output": raw.encode()})
    assert len(planted) == len(world["secrets"]) + len(NODE_PLANTED)
    for name, data in blobs.items():
        for key, secret in planted.items():
            assert secret.encode() not in data, "%s leaks %s (%s)" % (name, key, secret)
        assert b'"kind": "Secret"' not in data, name
    # what was hidden, per file and rule, and the run's one line saying so
    report = index["redactions"]
    assert report["files"][node_dir + "crictl-info.json"] == {"registry-auth": 6, "registry-header": 1}
    assert report["files"][node_dir + "containerd-config-dump.toml"] == {"registry-auth": 6, "registry-header": 1}
    assert report["files"][node_dir + "containerd.log"] == {"secret-assignment": 1, "http-auth-header": 1, "license": 1}
    pods_report = report["files"]["cluster/pods.json"]
    assert {"secret-flag": 2, "url-credentials": 1, "license": 1, "aws-access-key-id": 1, "jwt": 1,
            "pem-private-key": 1, "last-applied": 1}.items() <= pods_report.items()
    assert pods_report["http-auth-header"] >= 1 and pods_report["env-value"] >= 1
    assert ("%d values hidden in %d files (which rule hid how many, per file: %s/bundle.json, redactions)"
            % (report["values"], report["files_with_values"], dest)) in out
    assert "and %s (the file to send)" % archive in out

    # one judgment, two sources: gpu_diagnose reads the bundle, node side included, folder or archive ...
    import gpu_diagnose
    folder = module_runner(gpu_diagnose.main, {"bundle": str(dest), "namespace": world["ns"], "pod": "trainer"})
    assert not folder["failed"], folder.get("msg")
    packed = module_runner(gpu_diagnose.main, {"bundle": str(archive), "namespace": world["ns"], "pod": "trainer"})
    assert not packed["failed"] and packed["layers"] == folder["layers"] and packed["report"] == folder["report"]
    driver = folder["layers"][0]
    assert driver["layer"] == "driver" and "fabric_manager" in json.dumps(driver["evidence"])   # nodes/<node>/fabric-manager.txt
    # ... and a bundle without a node side judges as the live cluster without node access does
    dest2 = tmp_path / "cluster-only"
    rc, out, raw = run(base + ["-e", "dest=%s" % dest2, "-e", "node_group=nobody",
                               "-e", "gpu_support_bundle_max_logs=1", "-e", "archive=false"], tools)
    assert rc == 0 and not (dest2 / "nodes").exists(), raw[-2000:]
    assert not pathlib.Path(str(dest2) + ".tar.gz").exists()
    logs = {k: v for k, v in json.loads((dest2 / "bundle.json").read_text())["files"].items() if k.startswith("logs/")}
    assert logs["logs/%s/trainer.log" % world["ns"]]["status"] != "skipped"          # the Pod asked for comes first
    assert [v["status"] for k, v in logs.items() if world["stack_ns"] in k] == ["skipped"]
    live = module_runner(gpu_diagnose.main, {"kubeconfig": cluster, "namespace": world["ns"], "pod": "trainer"})
    folder = module_runner(gpu_diagnose.main, {"bundle": str(dest2), "namespace": world["ns"], "pod": "trainer"})
    assert not live["failed"] and not folder["failed"], (live.get("msg"), folder.get("msg"))
    assert [(l["layer"], l["status"]) for l in folder["layers"]] == [(l["layer"], l["status"]) for l in live["layers"]], \
        (live["report"], folder["report"])
    assert folder["first_broken"] == live["first_broken"] is not None

    # a rerun keeps the earlier bundle, and says so
    before = {p: p.stat().st_mtime_ns for p in dest.rglob("*")}
    rc, out, raw = run(base + ["-e", "dest=%s" % dest], tools)
    assert rc == 0 and "changed=0" in out and "kept as it is" in out and "force" in out, raw[-2000:]
    assert before == {p: p.stat().st_mtime_ns for p in dest.rglob("*")}
    rc, out, raw = run(base + ["-e", "dest=%s" % dest, "-e", "force=true"], tools)
    assert rc == 0 and "changed=1" in out, raw[-2000:]
    assert (dest / "bundle.json").exists() and not list(tmp_path.glob(".bundle.*"))

    # a folder that is not a bundle is never written into
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("mine")
    rc, out, raw = run(base + ["-e", "dest=%s" % other, "-e", "force=true"], tools)
    assert rc != 0 and "not a support bundle" in out and sorted(os.listdir(other)) == ["todo.txt"]
