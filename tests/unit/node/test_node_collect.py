"""One collector, one vocabulary (issue 31 item 3): gpu_node_facts and gpu_bundle_node read a
node through node/collect.py - each command once - and the live facts are what the diagnosis
reads from a bundle of the same node; the old option name still works, with a deprecation.

The node is fake (no GPU, no systemd here): stand-ins print what the real tools print - the
lab's real node's crictl info, config dump and logs (tests/bundle_corpus/lab-node-1-incident),
a kernel log with an Xid 79 (tests/diagnosis_corpus/real) - and each appends its argv to a
calls file, so a test counts the runs.
"""
import base64
import collections
import json
from lab_testing import ROOT  # tests/lab_testing.py

import pytest

import gpu_bundle_node
import gpu_node_facts
from ansible.module_utils.common import arg_spec
from ansible.module_utils.bundle import contents
from ansible.module_utils.bundle import layout
from ansible.module_utils.diagnosis.bundle_source import BundleSource
from ansible.module_utils.node import collect as node_collect

NODE = ROOT / "tests/bundle_corpus/lab-node-1-incident/nodes/lab-node-1"
DMESG = ROOT / "tests/diagnosis_corpus/real/dmesg-xid79.txt"

SMI_OK = """case "$*" in
  --query-gpu=*) echo "0, NVIDIA H100 80GB HBM3, GPU-a1, 550.54.15, 81559 MiB"
                 echo "1, NVIDIA H100 80GB HBM3, GPU-a2, 550.54.15, 81559 MiB";;
  "mig -lgip") echo "| GPU instance profiles: |"; echo "|   0  MIG 1g.10gb  19  7/7 |";;
  "mig -lgipp") echo "GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1";;
  *) echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |";;
esac
"""
SMI_BROKEN = """echo 'NVIDIA-SMI has failed because it couldn'"'"'t communicate with the NVIDIA driver.' >&2
exit 9
"""
CRICTL_OK = 'cat "%s"\n' % (NODE / "crictl-info.json")
CRICTL_DOWN = ("echo 'time=\"2025-01-01T00:00:00Z\" level=fatal msg=\"validate service connection: "
               "dial unix /run/containerd/containerd.sock: connect: connection refused\"' >&2\nexit 1\n")
JOURNALCTL = """case "$*" in
  "-u containerd "*) cat "%s";;
  "-u kubelet "*) cat "%s";;
  "-k "*) cat "%s";;
  *) exit 1;;
esac
""" % (NODE / "containerd.log", NODE / "kubelet.log", DMESG)
SYSTEMCTL_FAILED = "echo '* nvidia-fabricmanager.service - NVIDIA fabric manager service'\n" \
                   "echo '     Active: failed (Result: exit-code) since Tue'\nexit 3\n"
SYSTEMCTL_NONE = "echo 'Unit nvidia-fabricmanager.service could not be found.'\nexit 4\n"


def fake_node(tmp_path, smi=SMI_OK, crictl=CRICTL_OK, systemctl=SYSTEMCTL_FAILED):
    """(options both modules take, the calls file): each stand-in logs `name args` there first."""
    tools = tmp_path / "tools"
    tools.mkdir()
    calls = tmp_path / "calls"
    scripts = {"nvidia-smi": smi, "crictl": crictl, "containerd": 'cat "%s"\n' % (NODE / "containerd-config-dump.toml"),
               "journalctl": JOURNALCTL, "dmesg": "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2\n"
               "exit 1\n", "systemctl": systemctl}
    for name, body in scripts.items():
        path = tools / name
        path.write_text('#!/bin/sh\necho "%s $*" >> "%s"\n%s' % (name, calls, body))
        path.chmod(0o755)
    sockets = tmp_path / "device-plugins"
    sockets.mkdir()
    for name in ("kubelet.sock", "nvidia-gpu.sock"):
        (sockets / name).write_text("")
    options = {name: str(tools / name) for name in scripts}
    options["nvidia_smi"] = options.pop("nvidia-smi")
    options.update(driver_root="", runtime_endpoint="unix:///run/containerd/containerd.sock",
                   socket_dir=str(sockets), fabric_manager="always", timeout=20, max_bytes=1024 * 1024)
    return options, calls


def runs(calls):
    """Counter of the runs logged, each as 'name args'."""
    return collections.Counter(calls.read_text().splitlines()) if calls.exists() else collections.Counter()


def bundle_facts(tmp_path, out, node="n1"):
    """What gpu_diagnose reads from a bundle holding gpu_bundle_node's result `out` for `node`:
    its files under nodes/<node>/, its index in bundle.json - read by the diagnosis's BundleSource."""
    root = tmp_path / "bundle"
    (root / "nodes" / node).mkdir(parents=True)
    for name, data in out["files"].items():
        (root / "nodes" / node / name).write_bytes(base64.b64decode(data))
    (root / "bundle.json").write_text(json.dumps(
        {"format": contents.FORMAT, "files": {"nodes/%s/%s" % (node, k): v for k, v in out["index"].items()}}))
    return BundleSource(str(root)).facts(node)


@pytest.mark.parametrize("case", ["healthy-driver", "driver-broken-cri-down-no-fabric-manager"])
def test_live_facts_are_what_the_diagnosis_reads_from_a_bundle_of_the_node(module_runner, tmp_path, case):
    broken = case != "healthy-driver"
    options, _calls = fake_node(tmp_path, smi=SMI_BROKEN if broken else SMI_OK,
                                crictl=CRICTL_DOWN if broken else CRICTL_OK,
                                systemctl=SYSTEMCTL_NONE if broken else SYSTEMCTL_FAILED)
    live = module_runner(gpu_node_facts.main, dict(options, resource=["nvidia.com/gpu"]))
    bundle = module_runner(gpu_bundle_node.main, dict(options, node_name="n1"), check_mode=True)
    assert not live["failed"] and not bundle["failed"], (live.get("msg"), bundle.get("msg"))
    facts = dict(live["node_facts"])
    read = bundle_facts(tmp_path, bundle)
    # nvidia_smi (how it was run) is the one key only the live side has
    assert facts.pop("nvidia_smi", options["nvidia_smi"]) == options["nvidia_smi"]
    assert facts == read
    # ... and it is a node worth comparing: the facts the node's artefacts carry are there
    assert facts["kernel_xid"] == ["NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus"]
    assert facts["device_plugin_sockets"] == ["nvidia-gpu.sock"]
    assert facts["runtimes_configured"]
    if broken:
        assert facts["driver_ok"] is False and "communicate with the NVIDIA driver" in facts["driver_error"]
        assert "connection refused" in facts["cri_error"] and "runtimes_running" not in facts
        assert "fabric_manager" not in facts               # not installed, no NVSwitch: not asked about
        assert bundle["index"]["fabric-manager.txt"]["status"] == "missing"
    else:
        assert facts["driver_ok"] is True and [g["uuid"] for g in facts["gpus"]] == ["GPU-a1", "GPU-a2"]
        assert facts["fabric_manager"] == "failed" and facts["mig_lgipp"].startswith("GPU  0 Profile ID 19")
        assert facts["runtimes_running"] and isinstance(facts["restart_pending"], bool)
    # the live artefacts are the bundle's files (texts of the same bytes)
    for name, text in live["artefacts"].items():
        if name in bundle["files"]:
            assert base64.b64decode(bundle["files"][name]).decode() == text


def test_each_command_runs_once_per_collection(module_runner, tmp_path):
    options, calls = fake_node(tmp_path)
    module_runner(gpu_bundle_node.main, dict(options, node_name="n1"), check_mode=True)
    bundle = runs(calls)
    assert set(bundle.values()) == {1}, bundle
    assert sorted(line.split(" ", 1)[0] for line in bundle) == [
        "containerd", "crictl", "crictl", "dmesg",                                 # crictl info, crictl ps
        "journalctl", "journalctl", "journalctl",                                  # -u containerd, -u kubelet, -k
        "nvidia-smi", "nvidia-smi", "nvidia-smi", "nvidia-smi", "systemctl"]       # table, query, -lgip, -lgipp
    calls.unlink()
    module_runner(gpu_node_facts.main, options)
    live = runs(calls)
    assert set(live.values()) == {1}, live
    # the same runs, but the kubelet's log, which no fact reads
    assert live == bundle - collections.Counter({l: 1 for l in bundle if l.startswith("journalctl -u kubelet")})


def test_the_old_option_name_still_works_and_says_it_is_deprecated(module_runner, tmp_path, monkeypatch):
    options, calls = fake_node(tmp_path)
    told = []
    # where AnsibleModule's argument validation reports a deprecated alias
    monkeypatch.setattr(arg_spec, "deprecate", lambda msg, **kw: told.append((msg, kw)))
    endpoint = "unix:///run/k3s/containerd/containerd.sock"
    old = dict(options, crictl_endpoint=endpoint)
    del old["runtime_endpoint"]
    out = module_runner(gpu_bundle_node.main, old, check_mode=True)
    assert not out["failed"], out.get("msg")
    assert "--runtime-endpoint %s info" % endpoint in out["index"]["crictl-info.json"]["command"]
    assert "crictl --runtime-endpoint %s info" % endpoint in runs(calls)
    assert len(told) == 1 and "crictl_endpoint" in told[0][0]
    assert told[0][1]["version"] == "2.0.0" and told[0][1]["deprecator"].resolved_name == "gpu_incident.lab"
    # the new name: the same run, no warning
    told.clear()
    out = module_runner(gpu_bundle_node.main, dict(options, runtime_endpoint=endpoint), check_mode=True)
    assert "--runtime-endpoint %s info" % endpoint in out["index"]["crictl-info.json"]["command"] and told == []


def test_both_modules_take_one_vocabulary():
    """The node options of gpu_node_facts and gpu_bundle_node are one set (node.collect's), each
    module adding only its own (resource: the facts' reading; kubelet's log, node_name, redact:
    the bundle's files)."""
    import ast
    names = {}
    for module in ("gpu_node_facts", "gpu_bundle_node"):
        import yaml
        source = (ROOT / "library" / (module + ".py")).read_text()
        doc = next(n.value.value for n in ast.parse(source).body if isinstance(n, ast.Assign)
                   and n.targets[0].id == "DOCUMENTATION")
        names[module] = set(yaml.safe_load(doc)["options"])
    shared = set(node_collect.NODE_OPTIONS)
    assert names["gpu_node_facts"] - shared == {"resource"}
    assert names["gpu_bundle_node"] - shared == {"kubelet_log", "kubelet_unit", "node_name", "redact"}
    assert shared <= names["gpu_node_facts"] and shared <= names["gpu_bundle_node"]
    assert set(node_collect.NODE_FILES) == set(layout.NODE_FILES)
