"""playbooks/support-bundle.yml against a throw-away real control plane and a "GPU node" reached
by a local connection with fake node tools: the exact layout, the redaction (no Secret, no env
value, no ConfigMap value outside the GPU stack, no last-applied copy), the index, a rerun that
keeps the earlier bundle, force, and --check writing nothing.

The node tools are fakes (this machine has no GPU): shell scripts on PATH that print what the
real ones print in shape; the test checks that each file holds exactly what its command printed
and that the commands got the options the role was given (crictl's endpoint, containerd's config).
"""
import json
import os
import pathlib
import subprocess
import sys
import time
import uuid

import pytest

from ansible.module_utils.lab_kube import condition

ROOT = pathlib.Path(__file__).resolve().parents[2]
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


def wait(what, check, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail("waited %ss for %s" % (timeout, what))
        time.sleep(0.3)  # poll interval of the bounded wait above


def script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def fake_node(tmp):
    tools, state = tmp / "tools", tmp / "node"
    tools.mkdir()
    (state / "device-plugins").mkdir(parents=True)
    for sock in ("kubelet.sock", "nvidia-gpu.sock"):
        (state / "device-plugins" / sock).write_text("")
    (state / "containerd.log").write_text(NODE_FILES["containerd.log"])
    (state / "config.toml").write_text(DUMP)
    for name, text in (("smi.txt", SMI), ("query.csv", QUERY), ("lgip.txt", LGIP), ("dmesg.txt", DMESG),
                       ("fm.txt", FM), ("crictl.json", CRICTL + "\n"), ("dump.toml", DUMP)):
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
    secrets = {k: "%s-%s" % (k, tag) for k in ("secret-data", "env-value", "cm-value", "ds-env", "applied")}
    kube.create("/api/v1/namespaces/%s/secrets" % namespace, {"metadata": {"name": "creds"},
                                                              "stringData": {"token": secrets["secret-data"]}})
    kube.create("/api/v1/namespaces/%s/configmaps" % namespace, {"metadata": {"name": "app-settings", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps({"data": {"password": secrets["applied"]}})}},
        "data": {"password": secrets["cm-value"]}})
    kube.create("/api/v1/namespaces/%s/configmaps" % stack_ns, {"metadata": {"name": "plugin-config"},
                                                                "data": {"config.yaml": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"}})
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps({"env": secrets["applied"]})}},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "containers": [{
            "name": "cuda", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
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


def test_support_bundle_from_a_live_cluster_and_a_node(tmp_path, cluster, world, module_runner):
    tools, state = fake_node(tmp_path)
    (tmp_path / "nodes.yml").write_text(json.dumps({"all": {"children": {"gpu_nodes": {"hosts": {world["node"]: {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpu_support_bundle_crictl_endpoint": "unix://%s/containerd.sock" % state,
        "gpu_support_bundle_containerd_config": "%s/config.toml" % state,
        "gpu_support_bundle_containerd_log": "%s/containerd.log" % state,
        "gpu_support_bundle_kubelet_unit": "",
        "gpu_support_bundle_socket_dir": "%s/device-plugins" % state}}}}}}))
    dest = tmp_path / "bundle"
    base = ["-i", "inventory/hosts.yml", "-i", str(tmp_path / "nodes.yml"), "playbooks/support-bundle.yml",
            "-e", "lab_kubeconfig=" + cluster, "-e", "pod=%s/trainer" % world["ns"],
            "-e", "lab_real_node=false",
            "-e", json.dumps({"gpu_support_bundle_stack_namespaces": [world["stack_ns"]]})]

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
    for name, text in NODE_FILES.items():
        assert files[node_dir + name].decode() == text, name
    index = json.loads(files["bundle.json"])
    assert index["format"] == "gpu-incident-lab/support-bundle" and index["nodes"] == [world["node"]]
    assert index["files"][node_dir + "kubelet.log"]["status"] == "missing"
    assert index["files"][node_dir + "fabric-manager.txt"]["rc"] == 3        # status text kept: not running
    # kwok serves no container logs: the Pod's log is listed, with the API server's reason
    log = index["files"]["logs/%s/trainer.log" % world["ns"]]
    assert log["why"] == "asked for" and log["status"] in ("failed", "collected") and (log.get("reason") or log["status"] == "collected")
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

    # no secret anywhere, in any file, in any form
    for name, data in files.items():
        for secret in world["secrets"].values():
            assert secret.encode() not in data, "%s leaks %s" % (name, secret)
        assert b'"kind": "Secret"' not in data, name

    # one judgment, two sources: gpu_diagnose reads the bundle, node side included ...
    import gpu_diagnose
    folder = module_runner(gpu_diagnose.main, {"bundle": str(dest), "namespace": world["ns"], "pod": "trainer"})
    assert not folder["failed"], folder.get("msg")
    driver = folder["layers"][0]
    assert driver["layer"] == "driver" and "fabric_manager" in json.dumps(driver["evidence"])   # nodes/<node>/fabric-manager.txt
    # ... and a bundle without a node side judges as the live cluster without node access does
    dest2 = tmp_path / "cluster-only"
    rc, out, raw = run(base + ["-e", "dest=%s" % dest2, "-e", "node_group=nobody",
                               "-e", "gpu_support_bundle_max_logs=1"], tools)
    assert rc == 0 and not (dest2 / "nodes").exists(), raw[-2000:]
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
