"""gpu_bundle_node: the module's main() - a node's side of a support bundle, each file with its
index entry: a node without any tool, and the incident's node side from a real containerd 1.6.20
daemon asked by a real crictl (the fixtures crictl, daemon: tests/unit/conftest.py)."""
import base64
import json

from lab_testing import TESTS

import gpu_bundle_node
from ansible.module_utils.bundle import layout
from ansible.module_utils.node import commands as node_commands

CORPUS = TESTS / "diagnosis_corpus"


def test_a_node_without_any_tool_gives_no_file_and_says_why(tmp_path, monkeypatch, module_runner):
    monkeypatch.setenv("PATH", str(tmp_path))            # nothing installed
    monkeypatch.setattr(node_commands, "which", lambda name: None)
    out = module_runner(gpu_bundle_node.main, {"driver_root": "", "socket_dir": str(tmp_path / "none"),
                                               "host_root": str(tmp_path)}, check_mode=True)
    assert not out["failed"] and out["files"] == {} and not out["changed"]
    assert set(out["index"]) == set(layout.NODE_FILES)
    assert all(e["status"] == "missing" and e["reason"] for e in out["index"].values())
    assert "not installed" in out["index"]["nvidia-smi.txt"]["reason"]
    assert out["index"]["cdi-specs.json"]["reason"] == "no CDI spec folder here: /etc/cdi, /var/run/cdi (CDI's defaults) under %s" % tmp_path


def test_the_node_side_of_the_incident_from_a_real_daemon(module_runner, containerd_oracle, crictl, daemon,
                                                          tmp_path):
    """The drop-in written, containerd not restarted: crictl-info.json (the running daemon) keeps
    runc only while containerd-config-dump.toml (the files) lists nvidia - and the bundle reader
    makes restart_pending of them. The daemon gone: no crictl-info.json, crictl's words kept."""
    from ansible.module_utils.diagnosis import bundle_source
    d, endpoint, proc = daemon
    args = {"crictl": crictl, "runtime_endpoint": endpoint, "containerd": containerd_oracle,
            "containerd_config": str(d / "config.toml"), "containerd_log": str(d / "containerd.log"),
            "nvidia_smi": "/nonexistent/nvidia-smi", "driver_root": "", "socket_dir": str(tmp_path / "none"),
            "kubelet_unit": ""}
    (d / "conf.d/99-nvidia.toml").write_text((CORPUS / "containerd-1.6.20/99-nvidia.toml").read_text())
    out = module_runner(gpu_bundle_node.main, args, check_mode=True)
    files = {k: base64.b64decode(v) for k, v in out["files"].items()}
    running = json.loads(files["crictl-info.json"])["config"]["containerd"]
    assert sorted(running["runtimes"]) == ["runc"] and running["defaultRuntimeName"] == "runc"
    assert b'runtimes.nvidia]' in files["containerd-config-dump.toml"]
    assert b"starting containerd" in files["containerd.log"]                 # the daemon's own log
    assert out["index"]["nvidia-smi.txt"]["status"] == "missing"
    folder = tmp_path / "nodes/n1"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    facts = bundle_source.bundle_node_facts(str(folder), index=out["index"])
    assert facts["restart_pending"] is True and facts["runtimes_running"] == ["runc"]
    proc.terminate()
    proc.wait(timeout=20)
    out = module_runner(gpu_bundle_node.main, args)
    entry = out["index"]["crictl-info.json"]
    assert "crictl-info.json" not in out["files"] and entry["status"] == "failed" and entry["rc"] != 0
    assert entry["output"] and endpoint.split("//")[1] in entry["output"] + entry["command"]
