"""The support bundle's pieces without a cluster: the node side with tools missing or failing,
the folder rules, redaction, and plain refusals (the live cluster and a node over a local
connection: tests/cluster/test_support_bundle.py)."""
import json
import os
from lab_testing import TESTS  # tests/lab_testing.py

import pytest

from ansible.module_utils.bundle import cluster_side
from ansible.module_utils.bundle import contents
from ansible.module_utils.bundle import layout
from ansible.module_utils.bundle import node_side
from ansible.module_utils.node import commands as node_commands

NODE_DEFAULTS = dict(nvidia_smi="nvidia-smi", driver_root="", crictl="crictl", runtime_endpoint="",
                     containerd="containerd", containerd_config="", containerd_log="", containerd_unit="containerd",
                     kubelet_log="", kubelet_unit="kubelet", socket_dir="/nonexistent/device-plugins",
                     fabric_manager_unit="nvidia-fabricmanager", max_bytes=1024, timeout=20)


def script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_a_failing_driver_keeps_its_words_and_skips_what_needs_it(tmp_path, monkeypatch):
    tools = tmp_path / "bin"
    tools.mkdir()
    script(tools / "nvidia-smi", "echo 'Failed to initialize NVML: Driver/library version mismatch'\n"
                                 "echo 'NVML library version: 550.90' >&2\nexit 18\n")
    script(tools / "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2\nexit 1\n")
    script(tools / "journalctl", '[ "$*" = "-k -b --no-pager" ] && echo "Dec 01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, '
                                 'pid=0, GPU has fallen off the bus." && exit 0\nexit 1\n')
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.setattr(node_commands, "which", lambda name: str(tools / name) if (tools / name).exists() else None)
    found = node_side.collect_node(dict(NODE_DEFAULTS))
    assert b"version mismatch" in found["files"]["nvidia-smi.txt"] and b"550.90" in found["files"]["nvidia-smi.txt"]
    assert found["index"]["nvidia-smi.txt"]["rc"] == 18
    query = found["index"]["nvidia-smi-query.csv"]
    assert "nvidia-smi-query.csv" not in found["files"] and query["status"] == "failed" and query["rc"] == 18
    assert found["index"]["mig-lgip.txt"]["status"] == "skipped"
    # dmesg refused (not root): the kernel log from journalctl -k, and dmesg's words kept
    assert b"fallen off the bus" in found["files"]["dmesg.txt"]
    assert "Operation not permitted" in found["index"]["dmesg.txt"]["dmesg"]["output"]


def test_systemctl_without_systemd_says_nothing_about_fabric_manager(tmp_path, monkeypatch):
    """This machine's own systemctl (a container without systemd as PID 1): exit 1 and these
    words - no fabric-manager.txt, so no reader takes it for a failed Fabric Manager."""
    tools = tmp_path / "bin"
    tools.mkdir()
    script(tools / "systemctl", "echo 'System has not been booted with systemd as init system (PID 1). Can'\\''t operate.'\n"
                                "echo 'Failed to connect to bus: Host is down'\nexit 1\n")
    monkeypatch.setattr(node_commands, "which", lambda name: str(tools / name) if (tools / name).exists() else None)
    found = node_side.collect_node(dict(NODE_DEFAULTS))
    entry = found["index"]["fabric-manager.txt"]
    assert "fabric-manager.txt" not in found["files"] and entry["status"] == "failed" and entry["rc"] == 1
    assert "not been booted with systemd" in entry["reason"]
    script(tools / "systemctl", "echo '* nvidia-fabricmanager.service - NVIDIA fabric manager service'\n"
                                "echo '     Active: failed (Result: exit-code)'\nexit 3\n")
    found = node_side.collect_node(dict(NODE_DEFAULTS))
    assert b"Active: failed" in found["files"]["fabric-manager.txt"]
    script(tools / "systemctl", "echo 'Unit nvidia-fabricmanager.service could not be found.'\nexit 4\n")
    assert node_side.collect_node(dict(NODE_DEFAULTS))["index"]["fabric-manager.txt"]["status"] == "missing"


def test_long_output_keeps_its_end(tmp_path):
    log = tmp_path / "containerd.log"
    log.write_text("".join("line %05d\n" % i for i in range(1000)))
    found = node_side.collect_node(dict(NODE_DEFAULTS, containerd_log=str(log), nvidia_smi=str(tmp_path / "none"),
                                  crictl=str(tmp_path / "none"), containerd=str(tmp_path / "none")))
    data = found["files"]["containerd.log"]
    assert len(data) <= 1024 and data.endswith(b"line 00999\n") and data.startswith(b"line ")
    assert found["index"]["containerd.log"]["truncated_to_bytes"] == 1024


def test_redaction_keeps_names_and_references():
    red = cluster_side.Redactions()
    pod = {"metadata": {"name": "p", "namespace": "ml", "managedFields": [{"manager": "kubectl"}],
                        "annotations": {contents.LAST_APPLIED: '{"value": "s3cret"}'}},
           "spec": {"initContainers": [{"name": "i", "env": [{"name": "A", "value": "s3cret"}]}],
                    "containers": [{"name": "c", "env": [{"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]}}
    cluster_side.redact("Pod", pod, red)
    assert "s3cret" not in json.dumps(pod) and "managedFields" not in pod["metadata"]
    assert pod["spec"]["initContainers"][0]["env"] == [{"name": "A", "value": "<redacted>"}]
    assert pod["spec"]["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]["name"] == "s"
    cm = {"metadata": {"name": "x", "namespace": "ml"}, "data": {"k": "v"}, "binaryData": {"b": "AAA="}}
    assert cluster_side.redact("ConfigMap", cm, red)["data"] == {"k": "<redacted>"} and cm["binaryData"] == {"b": "<redacted>"}
    kept = {"metadata": {"name": "plugin", "namespace": "gpu-operator"}, "data": {"config.yaml": "version: v1"}}
    assert cluster_side.redact("ConfigMap", kept, red, keep_configmap=True)["data"] == {"config.yaml": "version: v1"}
    assert red.as_dict()["configmaps"] == ["ml/x"] and red.env_values == 1 and red.last_applied == 1


def test_stack_pods_and_the_configmaps_they_use():
    pods = [{"metadata": {"name": "a", "namespace": "kube-system", "labels": {"name": "nvidia-device-plugin-ds"}},
             "spec": {"volumes": [{"name": "v", "configMap": {"name": "dp-config"}}], "containers": []}},
            {"metadata": {"name": "b", "namespace": "ml", "labels": {"app": "web"}}, "spec": {}},
            {"metadata": {"name": "c", "namespace": "gpu-operator"}, "spec": {}}]
    stack = cluster_side.stack_pods(pods, contents.STACK_NAMESPACES, contents.STACK_SELECTORS)
    assert [p["metadata"]["name"] for p in stack] == ["a", "c"]
    assert cluster_side.referenced_configmaps(pods[0]) == {("kube-system", "dp-config")}
    assert cluster_side.matches({"a": "1"}, cluster_side.parse_selector("a=1,!b")) and not cluster_side.matches({"a": "1", "b": ""}, cluster_side.parse_selector("a=1,!b"))
    with pytest.raises(contents.BundleError):
        cluster_side.parse_selector(" , ")


def test_the_folder_rules(tmp_path):
    dest = tmp_path / "b"
    assert contents.existing(str(dest)) is None
    contents.write(str(dest), {"bundle.json": cluster_side.dumps({"format": contents.FORMAT}), "cluster/nodes.json": b"{}"})
    assert contents.existing(str(dest))["format"] == contents.FORMAT
    assert oct(os.stat(dest / "cluster/nodes.json").st_mode & 0o777) == "0o600"
    contents.write(str(dest), {"bundle.json": cluster_side.dumps({"format": contents.FORMAT, "n": 2})})   # replaced whole
    assert sorted(os.listdir(dest)) == ["bundle.json"] and sorted(os.listdir(tmp_path)) == ["b"]
    (tmp_path / "file").write_text("x")
    for bad, words in ((tmp_path / "file", "not a folder"), (tmp_path, "not a support bundle")):
        with pytest.raises(contents.BundleError, match=words):
            contents.existing(str(bad))
    with pytest.raises(contents.BundleError):
        contents.write(str(tmp_path / "c"), {"../escape": b"x"})
    assert not (tmp_path / "escape").exists() and not (tmp_path / "c").exists()


# a real containerd 1.6.20 daemon asked by a real crictl (the fixtures crictl, daemon: tests/unit/conftest.py)
CORPUS = TESTS / "diagnosis_corpus"


def test_a_real_bundle_of_the_lab_real_node(module_runner):
    """tests/bundle_corpus/lab-node-1-incident (SOURCE.md): written by this collector from the lab's
    real node in the incident's end state. Its index covers every layout file, no env value is in
    it, and gpu_diagnose reads it as the incident: the files give nvidia, the daemon never restarted."""
    import pathlib
    import gpu_diagnose
    root = TESTS / "bundle_corpus/lab-node-1-incident"
    index = json.loads((root / "bundle.json").read_text())
    assert index["format"] == contents.FORMAT and index["nodes"] == ["lab-node-1"]
    for rel, entry in index["files"].items():
        assert (root / rel).is_file() == (entry["status"] == "collected"), rel
    # every layout file of its day: the CDI summaries came later (issue 48) - an older bundle is read without them
    later = {"cdi-specs.json", "container-devices.json"}
    assert {"nodes/lab-node-1/" + n for n in layout.NODE_FILES if n not in later} <= set(index["files"])
    assert not {"nodes/lab-node-1/" + n for n in later} & set(index["files"])
    pods = json.loads((root / "cluster/pods.json").read_text())["items"]
    values = [e["value"] for p in pods for c in p["spec"]["containers"] for e in c.get("env") or [] if "value" in e]
    assert set(values) <= {contents.REDACTED}       # (the lab's Pods carry few env values; the cluster test plants them)
    running = json.loads((root / "nodes/lab-node-1/crictl-info.json").read_text())["config"]["containerd"]
    assert sorted(running["runtimes"]) == ["runc"]
    out = module_runner(gpu_diagnose.main, {"bundle": str(root), "node": "lab-node-1"})
    assert not out["failed"], out.get("msg")
    assert out["first_broken"] == "container-runtime" and "restart pending" in out["report"]
    assert [l["status"] for l in out["layers"]][:1] == ["unknown"]          # no nvidia-smi there: unknown, not ok
