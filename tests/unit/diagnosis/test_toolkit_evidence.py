"""Issue 49 item 4: the container-runtime layer quotes NVIDIA's toolkit installer (the GPU
Operator's DaemonSet Pod on the node) in its own words when it wrote and did not restart
containerd. Its log lines are the real installer's, v1.20.2 on the lab's real node
(playbooks/toolkit.yml, tests/cluster/test_real_node.py), read here from a support bundle folder
the way gpu_diagnose reads one."""
import json

from ansible.module_utils.diagnosis import host_layers
from ansible.module_utils.diagnosis.bundle_source import BundleSource
from ansible.module_utils.diagnosis.walk import Diagnosis

NODE = "lab-node-1"
POD = "nvidia-container-toolkit-daemonset-zlxff"
# the installer's stderr as the kubelet logged it (RUNTIME_RESTART_MODE=none, then signal)
NONE_LOG = """time="2026-12-07T14:50:01Z" level=info msg="Flushing config to /runtime/config-dir.d/99-nvidia.toml"
time="2026-12-07T14:50:01Z" level=warning msg="Skipping restart of containerd due to --restart-mode=none"
time="2026-12-07T14:50:01Z" level=info msg="Completed 'setup' for nvidia-ctk-installer"
time="2026-12-07T14:50:01Z" level=info msg="Waiting for signal"
"""
EARLY_LOG = """time="2026-12-07T15:02:08Z" level=info msg="Flushing config to /runtime/config-dir.d/99-nvidia.toml"
time="2026-12-07T15:02:08Z" level=info msg="Sending SIGHUP signal to containerd"
time="2026-12-07T15:02:08Z" level=info msg="Signal received, exiting early"
time="2026-12-07T15:02:08Z" level=info msg="Shutting Down"
"""
SIGNALLED_LOG = """time="2026-12-07T14:57:36Z" level=info msg="Sending SIGHUP signal to containerd"
time="2026-12-07T14:57:36Z" level=info msg="Successfully signaled containerd"
time="2026-12-07T14:57:36Z" level=info msg="Waiting for signal"
"""
PENDING = {"runtimes_running": ["runc"], "runtimes_configured": ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"],
           "default_runtime": "runc", "default_runtime_configured": "nvidia", "cdi_enabled": False}


def bundle(tmp_path, log, mode, node=NODE):
    (tmp_path / "cluster").mkdir(parents=True)
    node_obj = {"metadata": {"name": NODE, "labels": {}}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    pod = {"metadata": {"name": POD, "namespace": "gpu-operator", "labels": {"app": "nvidia-container-toolkit-daemonset"}},
           "spec": {"nodeName": node, "containers": [{"name": "nvidia-container-toolkit-ctr", "env": (
               [{"name": "RUNTIME", "value": "containerd"}] + ([{"name": "RUNTIME_RESTART_MODE", "value": mode}] if mode else []))}]},
           "status": {"phase": "Running"}}
    (tmp_path / "cluster/nodes.json").write_text(json.dumps({"items": [node_obj]}))
    (tmp_path / "cluster/pods.json").write_text(json.dumps({"items": [pod]}))
    (tmp_path / "logs/gpu-operator").mkdir(parents=True)
    (tmp_path / "logs/gpu-operator" / (POD + ".log")).write_text(log)
    walk = Diagnosis(BundleSource(str(tmp_path), node_facts={NODE: PENDING}))
    seen = walk.see(walk.nodes()[NODE])
    return seen, host_layers.container_runtime(seen)


def evidence(result):
    return [(e["source"], e["value"]) if isinstance(e, dict) else tuple(e) for e in result["evidence"]]


def test_the_installer_that_skipped_the_restart_is_quoted_and_named_with_the_pending_restart(tmp_path):
    seen, result = bundle(tmp_path, NONE_LOG, "none")
    said = evidence(result)
    cited = [(s, v) for s, v in said if "NVIDIA's toolkit installer" in s]
    assert len(cited) == 1 and cited[0][0].endswith("(NVIDIA's toolkit installer, RUNTIME_RESTART_MODE=none)")
    assert POD in cited[0][0] and "Skipping restart of containerd due to --restart-mode=none" in cited[0][1]
    findings = [v for s, v in said if s == "finding" and "toolkit installer" in v]
    assert findings and findings[0].startswith("the toolkit installer on lab-node-1 wrote containerd's config and did "
                                               "not restart it - its own words: ")
    assert "Skipping restart of containerd due to --restart-mode=none" in findings[0]


def test_an_installer_that_exited_early_is_quoted_its_default_mode_named(tmp_path):
    _, result = bundle(tmp_path, EARLY_LOG, None)
    said = evidence(result)
    assert any(s.endswith("RUNTIME_RESTART_MODE=signal (its default))") and "Signal received, exiting early" in v
               for s, v in said)
    assert [v for s, v in said if s == "finding" and "exiting early" in v]


def test_a_restart_done_is_cited_without_a_finding_and_another_node_s_installer_is_not_cited(tmp_path):
    _, result = bundle(tmp_path / "done", SIGNALLED_LOG, "signal")
    said = evidence(result)
    assert any("Successfully signaled containerd" in v for s, v in said if "toolkit installer" in s)
    assert not [v for s, v in said if s == "finding" and "toolkit installer" in v]
    _, elsewhere = bundle(tmp_path / "elsewhere", NONE_LOG, "none", node="lab-node-0")
    assert not [s for s, v in evidence(elsewhere) if "toolkit installer" in s or "toolkit installer" in str(v)]
