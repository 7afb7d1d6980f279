"""The driver guard against a real API server: its admission policy, compiled and enforced by
kube-apiserver itself, and its label, set by the role from nvidia-smi run on a "node" (a local
connection with a fake nvidia-smi) while GPU feature discovery's labels stay untouched."""
import os
import pathlib
import subprocess
import sys
import uuid

import jinja2
import pytest
import yaml

from ansible.module_utils.kube.client import KubeError
from lab_testing import wait_for as wait  # tests/lab_testing.py: the one bounded wait

ROOT = pathlib.Path(__file__).resolve().parents[2]
LABEL = "gpu-incident-lab/driver-version"
GFD = {"nvidia.com/gpu.present": "true", "nvidia.com/cuda.driver-version.full": "550.54.15",
       "nvidia.com/cuda.driver.major": "550"}


def render_policy(**overrides):
    defaults = yaml.safe_load((ROOT / "roles/driver_guard/defaults/main.yml").read_text())
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    values = dict(defaults, **overrides)
    values["driver_guard_required_label"] = env.from_string(
        defaults["driver_guard_required_label"]).render(**values)
    text = env.from_string((ROOT / "roles/driver_guard/templates/policy.yaml.j2").read_text()).render(**values)
    return list(yaml.safe_load_all(text))


def affinity(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}}}


def gpu(resource="nvidia.com/gpu", where="limits"):
    """A container asking for the resource; extended resources need limits (a request alone
    is invalid: "Limit must be set for non overcommitable resources"), so "requests" sets both."""
    wants = {"limits": {resource: "1"}}
    if where == "requests":
        wants["requests"] = {resource: "1"}
    return {"name": "c", "image": "x", "resources": wants}


EXISTS = {"key": LABEL, "operator": "Exists"}
REFUSED = {
    "gpu-limit": {"containers": [gpu()]},
    "gpu-request-second-container": {"containers": [{"name": "a", "image": "x"},
                                                    dict(gpu("nvidia.com/gpu", "requests"), name="b")]},
    "shared": {"containers": [gpu("nvidia.com/gpu.shared")]},
    "mig-in-init": {"initContainers": [gpu("nvidia.com/mig-1g.10gb")], "containers": [{"name": "m", "image": "x"}]},
    "mig-3g": {"containers": [gpu("nvidia.com/mig-3g.40gb", "requests")]},
    # GFD's label is history, not health: pinning to it is not enough
    "gfd-label-only": {"containers": [gpu()], "affinity": affinity([{"key": "nvidia.com/cuda.driver.major",
                                                                     "operator": "Exists"}])},
    "one-term-without": {"containers": [gpu()], "affinity": affinity([EXISTS], [{"key": "zone", "operator": "Exists"}])},
    "does-not-exist": {"containers": [gpu()], "affinity": affinity([{"key": LABEL, "operator": "DoesNotExist"}])},
    "preferred-only": {"containers": [gpu()], "affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
            "matchExpressions": [EXISTS]}}]}}},
}
ADMITTED = {
    "affinity-exists": {"containers": [gpu()], "affinity": affinity([EXISTS])},
    "affinity-in-every-term": {"containers": [gpu("nvidia.com/mig-1g.10gb")], "affinity": affinity(
        [EXISTS, {"key": "zone", "operator": "In", "values": ["a"]}],
        [{"key": LABEL, "operator": "In", "values": ["550.54.15", "550.90.07"]}])},
    "node-selector": {"containers": [gpu("nvidia.com/gpu.shared")], "nodeSelector": {LABEL: "550.54.15"}},
    "no-gpu": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": "1"}}}]},
    "other-vendor": {"containers": [gpu("amd.com/gpu")]},
}


@pytest.fixture
def guarded(kube):
    suffix = uuid.uuid4().hex[:6]
    name = "guard-" + suffix
    policy, binding = render_policy(driver_guard_policy_name=name,
                                    driver_guard_namespace_label_value="enforce-" + suffix)
    kube.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", policy)
    kube.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", binding)
    ns = "g-" + suffix
    kube.create("/api/v1/namespaces", {"metadata": {"name": ns, "labels": {
        "gpu-incident-lab/driver-guard": "enforce-" + suffix}}})
    wait("default ServiceAccount in %s" % ns, lambda: kube.get(
        "/api/v1/namespaces/%s/serviceaccounts/default" % ns, missing_ok=True))
    yield ns
    for path in ("/api/v1/namespaces/" + ns,
                 "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/" + name,
                 "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/" + name):
        try:
            kube.request("DELETE", path)
        except KubeError:
            pass


def create(kube, ns, name, spec):
    """None when admitted (and removed again), else the API server's refusal."""
    try:
        kube.create("/api/v1/namespaces/%s/pods" % ns,
                    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
    except KubeError as exc:
        if exc.status in (403, 422):
            return exc
        raise
    kube.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (ns, name), params={"gracePeriodSeconds": "0"})
    return None


def test_driver_guard_policy_is_enforced_by_the_api_server(kube, guarded, namespace):
    # the policy takes effect once the API server has compiled it
    error = wait("the policy refusing an unguarded GPU Pod",
                 lambda: create(kube, guarded, "probe", REFUSED["gpu-limit"]), 60)
    assert "must need the node label %s" % LABEL in str(error)
    assert "nvidia.com/mig-*" in str(error) and "spec.nodeSelector" in str(error)
    for name, spec in REFUSED.items():
        error = create(kube, guarded, name, spec)
        assert error is not None and "ValidatingAdmissionPolicy" in str(error), "%s: %s" % (name, error)
    for name, spec in ADMITTED.items():
        assert create(kube, guarded, name, spec) is None
    # namespaces without the label are not guarded
    assert create(kube, namespace, "elsewhere", REFUSED["gpu-limit"]) is None


def test_the_policy_takes_other_resources_and_labels(kube):
    """Rendered with other settings, the CEL the API server compiles follows them."""
    policy, _binding = render_policy(driver_guard_policy_name="x", driver_guard_resources=["example.com/tpu"],
                                     driver_guard_resource_prefixes=[], driver_guard_label="site/driver")
    kube.request("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
                 body=policy, params={"dryRun": "All"})
    text = yaml.safe_dump(policy)
    assert "example.com/tpu" in text and "site/driver" in text and "nvidia.com" not in text


# ----------------------------------------------------------------- the role, on a node
def run_role(tmp_path, cluster, node, smi, check=False, expect_rc=0, **extra):
    vars_ = {"driver_guard_query_nvidia_smi": True, "driver_guard_kubeconfig": cluster,
             "driver_guard_nvidia_smi": smi, "driver_guard_driver_root": str(tmp_path / "no-driver-root"),
             "driver_guard_policy": False}
    vars_.update(extra)
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": {
        node: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    (tmp_path / "site.yml").write_text(yaml.safe_dump([{
        "hosts": "gpu_nodes", "gather_facts": False,
        "vars": {"ansible_python_interpreter": sys.executable},
        "roles": [{"role": "driver_guard", "vars": vars_}]}]))
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "site.yml")] + (["--check"] if check else [])
    out = subprocess.run(argv, cwd=ROOT, env=dict(os.environ, ANSIBLE_FORCE_COLOR="0"),
                         capture_output=True, text=True, timeout=300)
    assert (out.returncode == 0) == (expect_rc == 0), out.stdout[-3000:] + out.stderr[-2000:]
    return " ".join(out.stdout.split())      # the output callback may fold long messages


def fake(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_the_role_labels_from_nvidia_smi_and_leaves_gfd_alone(tmp_path, cluster, kube):
    node = "dg-" + uuid.uuid4().hex[:6]
    kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": node, "annotations": {"kwok.x-k8s.io/node": "fake"}, "labels": dict(GFD, type="kwok")}})

    def labels():
        return kube.get("/api/v1/nodes/" + node)["metadata"].get("labels") or {}
    try:
        works = fake(tmp_path / "smi-ok", "echo 550.54.15\necho 550.54.15\n")
        out = run_role(tmp_path, cluster, node, works, check=True)
        assert LABEL not in labels(), "check mode wrote the label"
        out = run_role(tmp_path, cluster, node, works)
        assert labels().get(LABEL) == "550.54.15" and "changed=1" in out
        assert run_role(tmp_path, cluster, node, works).count("changed=0") == 1      # idempotent

        # not installed: the label stays, and the role says so
        out = run_role(tmp_path, cluster, node, str(tmp_path / "no-such-nvidia-smi"))
        assert labels().get(LABEL) == "550.54.15" and "changed=0" in out
        assert "left as it is" in out and "not installed" in out
        # ran but says nothing about the driver (no permission): left as well
        out = run_role(tmp_path, cluster, node, fake(tmp_path / "smi-perm", "echo 'Insufficient Permissions'\nexit 4\n"))
        assert labels().get(LABEL) == "550.54.15" and "left as it is" in out

        # ran and failed: the guard's label goes, GFD's labels stay exactly as they were
        broken = fake(tmp_path / "smi-broken", "echo 'Failed to initialize NVML: Driver/library version mismatch'\n"
                                               "echo 'NVML library version: 550.90'\nexit 18\n")
        out = run_role(tmp_path, cluster, node, broken)
        now = labels()
        assert LABEL not in now and "removed" in out and "version mismatch" in out
        assert {k: now.get(k) for k in GFD} == GFD
        assert "changed=0" in run_role(tmp_path, cluster, node, broken)
    finally:
        kube.request("DELETE", "/api/v1/nodes/" + node)


def test_the_role_with_versions_given_as_the_lab_does(tmp_path, cluster, kube):
    nodes = ["dv-%s-%d" % (uuid.uuid4().hex[:6], i) for i in range(2)]
    for node in nodes:
        kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": node, "annotations": {"kwok.x-k8s.io/node": "fake"}, "labels": dict(GFD, type="kwok")}})
    try:
        out = run_role(tmp_path, cluster, nodes[0], "nvidia-smi", driver_guard_query_nvidia_smi=False,
                       driver_guard_versions={nodes[0]: "535.104.05", nodes[1]: "550.54.15"})
        got = [kube.get("/api/v1/nodes/" + n)["metadata"]["labels"].get(LABEL) for n in nodes]
        assert got == ["535.104.05", "550.54.15"], out
        run_role(tmp_path, cluster, nodes[0], "nvidia-smi", driver_guard_query_nvidia_smi=False,
                 driver_guard_versions={nodes[1]: ""})
        labels = kube.get("/api/v1/nodes/" + nodes[1])["metadata"]["labels"]
        assert LABEL not in labels and {k: labels.get(k) for k in GFD} == GFD
        assert kube.get("/api/v1/nodes/" + nodes[0])["metadata"]["labels"][LABEL] == "535.104.05"   # not listed: kept
        out = run_role(tmp_path, cluster, nodes[0], "nvidia-smi", expect_rc=2, driver_guard_query_nvidia_smi=False,
                       driver_guard_versions={nodes[0]: "[N/A]"})
        assert "a version must be what nvidia-smi prints" in out
        assert kube.get("/api/v1/nodes/" + nodes[0])["metadata"]["labels"][LABEL] == "535.104.05"
    finally:
        for node in nodes:
            kube.request("DELETE", "/api/v1/nodes/" + node)
