"""The CDI specs on a node and the containers' GPU devices (issue 48 item 6, module_utils/node/cdi.py),
through the node modules: gpu_node_facts reads them into the facts cdi_specs and container_devices,
gpu_bundle_node writes the same summaries as cdi-specs.json and container-devices.json.

The node is lab-node-2 of tests/diagnosis_corpus/dra-lab-node-2 (README.md): its spec folders under
node-root/ (the modules' host_root), and a crictl stand-in that prints what crictl v1.37.0 printed
against containerd 1.6.20 and 2.2.0 running the claim's container (crictl-*.json, recorded).
"""
import base64
import json
import shutil

import pytest
from lab_testing import TESTS  # tests/lab_testing.py

import gpu_bundle_node
import gpu_node_facts
from ansible.module_utils.diagnosis.diagnose import check_facts
from ansible.module_utils.node import cdi as node_cdi

CORPUS = TESTS / "diagnosis_corpus/dra-lab-node-2"
CLAIM_SPEC = "/var/run/cdi/k8s.gpu.nvidia.com-claim_05b595ad-06e3-4f09-8f7d-60128621dde8.yaml"
NODE = "lab-node-2"


def crictl(tmp_path, version, inspect=None, ps=None):
    """A crictl that prints what the real one printed against containerd `version`: `info`, `ps -o json`,
    `inspect -o json ID...` (`inspect`: a shell command of its own instead, `ps`: another file); each
    call logged."""
    info = CORPUS / ("crictl-info-%s.json" % ("2.2.0" if version == "2.2.0" else "1.6.20"))
    path = tmp_path / "crictl"
    path.write_text('#!/bin/sh\necho "$*" >> "%s"\ncase "$*" in\n'
                    '  *" info") cat "%s";;\n'
                    '  *" ps -o json") cat "%s";;\n'
                    '  *" inspect -o json "*) %s;;\n'
                    '  *) echo "unexpected: $*" >&2; exit 3;;\nesac\n' % (
                        tmp_path / "calls", info, ps or CORPUS / ("crictl-ps-%s.json" % version),
                        inspect or 'cat "%s"' % (CORPUS / ("crictl-inspect-%s.json" % version))))
    path.chmod(0o755)
    return str(path)


def options(tmp_path, version, **more):
    return dict({"crictl": more.pop("crictl", None) or crictl(tmp_path, version), "runtime_endpoint": "unix:///run/containerd/containerd.sock",
                 "containerd": str(tmp_path / "no-containerd"), "nvidia_smi": str(tmp_path / "no-nvidia-smi"),
                 "driver_root": "", "journalctl": str(tmp_path / "no-journalctl"), "kernel_log": str(tmp_path / "none"),
                 "socket_dir": str(tmp_path / "none"), "fabric_manager": "never",
                 "host_root": str(CORPUS / "node-root")}, **more)


def test_the_claims_spec_and_the_containers_devices_are_node_facts(module_runner, tmp_path):
    out = module_runner(gpu_node_facts.main, options(tmp_path, "1.6.20"))
    assert not out["failed"], out.get("msg")
    facts = out["node_facts"]
    specs = facts["cdi_specs"]
    # 1.6's crictl info names no spec folder: CDI's own two, read under the node's root
    assert specs["dirs"] == [{"dir": "/etc/cdi", "state": "read", "specs": 1},
                             {"dir": "/var/run/cdi", "state": "read", "specs": 1}]
    claim = next(s for s in specs["specs"] if s["file"] == CLAIM_SPEC)
    assert claim == {"file": CLAIM_SPEC, "cdiVersion": "0.5.0", "kind": "k8s.gpu.nvidia.com/claim",
                     "device_nodes": ["/dev/nvidia-uvm-tools", "/dev/nvidia-uvm", "/dev/nvidiactl"],
                     "devices": [{"name": "05b595ad-06e3-4f09-8f7d-60128621dde8-gpu-2", "device_nodes": ["/dev/nvidia2"]}]}
    gpu = next(s for s in specs["specs"] if s["file"] == "/etc/cdi/nvidia.json")
    assert gpu["kind"] == "nvidia.com/gpu" and [d["name"] for d in gpu["devices"]][-1] == "all"
    # containerd 1.6 ran the claim's container without a device, and kept no CDI_devices
    assert facts["container_devices"] == [{"id": "35496e1cbcee2", "pod": "dra-lab/gpu-by-claim", "container": "ctr",
                                           "devices": []}]
    assert facts["cdi_enabled"] is False
    # gpu_diagnose takes them as gpu_node_facts gives them (playbooks/diagnose.yml hands them over)
    assert check_facts({NODE: facts}) is None
    # what the diagnosis reads from a bundle of this node is the same
    bundle = module_runner(gpu_bundle_node.main, dict(options(tmp_path, "1.6.20"), node_name=NODE), check_mode=True)
    for name, key in (("cdi-specs.json", "cdi_specs"), ("container-devices.json", "container_devices")):
        doc = json.loads(base64.b64decode(bundle["files"][name]))
        assert (doc if key == "cdi_specs" else doc["containers"]) == facts[key], name
        assert bundle["index"][name]["status"] == "collected"


def test_on_2_2_the_spec_folders_are_those_crictl_info_names_and_the_container_has_its_devices(module_runner, tmp_path):
    facts = module_runner(gpu_node_facts.main, options(tmp_path, "2.2.0"))["node_facts"]
    assert facts["container_devices"][0]["devices"] == ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia2",
                                                        "/dev/nvidiactl"]
    assert facts["container_devices"][0]["cdi_devices"] == [
        "k8s.gpu.nvidia.com/claim=05b595ad-06e3-4f09-8f7d-60128621dde8-gpu-2"]
    assert check_facts({NODE: facts}) is None
    out = module_runner(gpu_node_facts.main, options(tmp_path, "2.2.0"))
    said = [c["command"] for c in out["checks"]]
    assert "read /etc/cdi, /var/run/cdi/*.json|*.yaml (crictl info .config.cdiSpecDirs) under %s" % (
        CORPUS / "node-root") in said
    # the option wins; a folder that is not there is said so, never an error
    facts = module_runner(gpu_node_facts.main, options(tmp_path, "2.2.0", cdi_spec_dirs=["/var/run/cdi", "/opt/cdi"]))
    assert facts["node_facts"]["cdi_specs"]["dirs"] == [{"dir": "/var/run/cdi", "state": "read", "specs": 1},
                                                        {"dir": "/opt/cdi", "state": "absent"}]


def test_a_container_gone_between_ps_and_inspect_is_counted_not_fatal(module_runner, tmp_path):
    """crictl inspect of several ids fails when one of them has gone: each is asked alone then."""
    ps = {"containers": [{"id": "a" * 64}, {"id": "gone" + "0" * 60}]}
    (tmp_path / "ps.json").write_text(json.dumps(ps))
    one = json.loads((CORPUS / "crictl-inspect-1.6.20.json").read_text())
    one["status"]["id"] = "a" * 64
    (tmp_path / "one.json").write_text(json.dumps(one))
    inspect = ('case "$*" in *gone*) echo "getting container status: NotFound" >&2; exit 1;; '
               '*) cat "%s";; esac' % (tmp_path / "one.json"))
    opts = options(tmp_path, "1.6.20", crictl=crictl(tmp_path, "1.6.20", inspect=inspect, ps=tmp_path / "ps.json"))
    out = module_runner(gpu_bundle_node.main, dict(opts, node_name=NODE), check_mode=True)
    doc = json.loads(base64.b64decode(out["files"]["container-devices.json"]))
    assert [c["id"] for c in doc["containers"]] == ["a" * 13] and doc["vanished"] == 1
    calls = (tmp_path / "calls").read_text().splitlines()
    assert sum(" inspect -o json " in c for c in calls) == 3           # both, then each alone


def test_no_crictl_leaves_the_containers_missing(module_runner, tmp_path):
    out = module_runner(gpu_bundle_node.main, dict(options(tmp_path, "1.6.20", crictl=str(tmp_path / "none")),
                                                   node_name=NODE), check_mode=True)
    assert out["index"]["container-devices.json"] == {"status": "missing", "reason": "%s not installed" % (tmp_path / "none")}
    # the specs are read all the same (CDI's own folders: no crictl info to name others)
    assert out["index"]["cdi-specs.json"]["status"] == "collected"


def test_specs_are_bounded_and_a_bad_one_is_said_not_guessed(tmp_path, monkeypatch):
    folder = tmp_path / "etc/cdi"
    folder.mkdir(parents=True)
    devices = [{"name": "d%d" % i, "containerEdits": {"deviceNodes": [{"path": "/dev/n%d" % i}]}} for i in range(70)]
    (folder / "many.json").write_text(json.dumps({"cdiVersion": "0.6.0", "kind": "example.com/dev", "devices": devices}))
    (folder / "broken.yaml").write_text("cdiVersion: 0.5.0\nkind: [unclosed\n")
    (folder / "nokind.json").write_text(json.dumps({"cdiVersion": "0.5.0"}))
    (folder / "huge.json").write_text(" " * (node_cdi.MAX_SPEC_BYTES + 1))
    (folder / "README.txt").write_text("not a spec: CDI reads .json and .yaml only")
    doc = node_cdi.read_specs(["/etc/cdi"], str(tmp_path))
    by = {s["file"].rsplit("/", 1)[1]: s for s in doc["specs"]}
    assert sorted(by) == ["broken.yaml", "huge.json", "many.json", "nokind.json"]
    assert len(by["many.json"]["devices"]) == node_cdi.MAX_DEVICES and by["many.json"]["devices_left_out"] == 6
    assert by["broken.yaml"]["error"].startswith("not YAML")
    assert by["nokind.json"]["error"].startswith("not a CDI spec: no kind")
    assert by["huge.json"]["error"] == "%d bytes: larger than the %d read of a spec" % (
        node_cdi.MAX_SPEC_BYTES + 1, node_cdi.MAX_SPEC_BYTES)
    for i in range(node_cdi.MAX_SPECS):
        (folder / ("extra-%02d.json" % i)).write_text(json.dumps({"kind": "example.com/x", "devices": []}))
    doc = node_cdi.read_specs(["/etc/cdi"], str(tmp_path))
    assert len(doc["specs"]) == node_cdi.MAX_SPECS and doc["specs_left_out"] == 4
    # without PyYAML where the node is read: a YAML spec says so, a JSON one is still read
    monkeypatch.setattr(node_cdi, "yaml", None)
    spec = node_cdi.read_spec(str(CORPUS / "node-root" / CLAIM_SPEC.lstrip("/")), CLAIM_SPEC)
    assert spec == {"file": CLAIM_SPEC, "error": "a YAML spec, and PyYAML is not installed where the node was read "
                                                 "(pip install PyYAML)"}
    assert node_cdi.read_spec(str(CORPUS / "node-root/etc/cdi/nvidia.json"), "/etc/cdi/nvidia.json")["kind"] == "nvidia.com/gpu"


@pytest.mark.parametrize("text, why", [("{", "not JSON at line 1"), ('{"dirs": []}', "no specs list")])
def test_a_summary_that_is_not_the_collectors_is_refused_with_the_fix(text, why):
    from ansible.module_utils.node.artefacts import ArtefactError, facts_from_artefacts
    with pytest.raises(ArtefactError) as refused:
        facts_from_artefacts({"cdi-specs.json": text})
    assert str(refused.value).startswith("cdi-specs.json: %s" % why) and "collect the node again" in str(refused.value)


def test_the_nodes_links_are_followed_under_its_root_not_this_hosts(tmp_path):
    """A node's /var/run is a link to /run: under /proc/<pid>/root the kernel would take that absolute
    target from this host's / - the node's own /run is the one meant."""
    root = tmp_path / "node"
    (root / "var").mkdir(parents=True)
    (root / "run/cdi").mkdir(parents=True)
    (root / "var/run").symlink_to("/run")
    shutil.copy(CORPUS / "node-root" / CLAIM_SPEC.lstrip("/"), root / "run/cdi")
    (root / "etc").mkdir()
    (root / "etc/cdi").symlink_to("../run/cdi")           # relative: followed the same way
    doc = node_cdi.read_specs(["/var/run/cdi", "/etc/cdi"], str(root))
    assert [d["state"] for d in doc["dirs"]] == ["read", "read"]
    assert [s["file"] for s in doc["specs"]] == [CLAIM_SPEC, "/etc/cdi/" + CLAIM_SPEC.rsplit("/", 1)[1]]
    assert all(s["kind"] == "k8s.gpu.nvidia.com/claim" for s in doc["specs"])
    assert node_cdi.under(str(root), "/var/run/cdi") == str(root / "run/cdi")


@pytest.mark.parametrize("config, expected", [
    # 1.6.20: neither key - no CDI at all
    ({"containerd": {"runtimes": {"runc": {}}}}, {"cdi_absent": True}),
    # 2.2.0: the switch and the folders
    ({"containerd": {"runtimes": {"runc": {}}}, "enableCDI": True, "cdiSpecDirs": ["/etc/cdi", "/var/run/cdi"]},
     {"cdi_enabled": True}),
    ({"containerd": {"runtimes": {"runc": {}}}, "enableCDI": False, "cdiSpecDirs": ["/etc/cdi"]}, {"cdi_enabled": False}),
    # 2.4.2: the folders only - CDI is always on, the switch is gone
    ({"containerd": {"runtimes": {"runc": {}}}, "cdiSpecDirs": ["/etc/cdi", "/var/run/cdi"]}, {"cdi_enabled": True}),
])
def test_crictl_info_s_cdi_as_each_containerd_prints_it(config, expected):
    from ansible.module_utils.node.artefacts import parse_crictl_info
    got = parse_crictl_info(json.dumps({"config": config}))
    assert {k: got[k] for k in ("cdi_absent", "cdi_enabled") if k in got} == expected
