"""manifest_drift: what counts as a difference (its cluster reads are in tests/cluster/)."""
import pytest
import manifest_drift
from ansible.module_utils.kube.compare import differences

LIVE_DS = {
    "metadata": {"name": "t", "namespace": "gpu-operator", "uid": "1", "generation": 2,
                 "labels": {"app": "t"}},
    "spec": {"selector": {"matchLabels": {"app": "t"}},
             "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
             "template": {"spec": {"containers": [
                 {"name": "toolkit", "image": "v1.17.0", "imagePullPolicy": "IfNotPresent",
                  "resources": {"requests": {"memory": "64Gi"}}}]}}},
    "status": {"numberReady": 2},
}


def manifest(image="v1.17.0", memory="64Gi", **extra):
    spec = {"selector": {"matchLabels": {"app": "t"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {"spec": {"containers": [
                {"name": "toolkit", "image": image, "resources": {"requests": {"memory": memory}}}]}}}
    spec.update(extra)
    return {"metadata": {"name": "t", "namespace": "gpu-operator"}, "spec": spec}


def test_fields_the_server_adds_are_not_differences():
    assert differences(manifest(), LIVE_DS) == []


def test_a_changed_value_is_named_by_its_path():
    assert differences(manifest(image="v1.16.2"), LIVE_DS) == ["spec.template.spec.containers[0].image"]


def test_quantities_compare_by_value_and_numbers_by_text():
    assert differences(manifest(memory="68719476736"), LIVE_DS) == []
    assert differences({"a": "1"}, {"a": 1}) == [] and differences({"a": True}, {"a": "true"}) == ["a"]


def test_list_length_and_scalar_lists():
    two = manifest()
    two["spec"]["template"]["spec"]["containers"].append({"name": "sidecar"})
    assert differences(two, LIVE_DS) == ["spec.template.spec.containers"]
    assert differences({"args": ["a", "b"]}, {"args": ["a", "b"]}) == []
    assert differences({"args": ["a", "b"]}, {"args": ["b", "a"]}) == ["args"]


def test_missing_and_empty_fields():
    assert differences({"data": {"any": "x"}}, {}) == ["data"]
    assert differences({"spec": {}}, {}) == [] and differences({"x": None}, {}) == []
    assert differences({"x": None}, {"x": 3}) == ["x"]


def test_definitions_must_be_manifests(module_runner, tmp_path):
    out = module_runner(manifest_drift.main, {"kubeconfig": str(tmp_path / "kc"),
                                              "definitions": [{"kind": "Pod", "metadata": {"name": "p"}}]})
    assert out["failed"] and "definitions[0] is not a manifest" in out["msg"]
    out = module_runner(manifest_drift.main, {"kubeconfig": str(tmp_path / "kc"),
                                              "definitions": [None, {"apiVersion": "v1", "kind": "Pod",
                                                                     "metadata": {"name": "p"}}]})
    assert out["failed"] and "cannot load kubeconfig" in out["msg"]


def test_a_pod_refused_for_a_service_account_not_made_yet_is_posted_again_once_it_exists():
    """kube-apiserver's words when a Pod comes right after its namespace (seen on this lab)."""
    from ansible.module_utils.kube import apply as manifest_apply
    from ansible.module_utils.kube.client import KubeError

    class Kube:
        def __init__(self, appears_after):
            self.posts, self.reads, self.appears_after = 0, 0, appears_after

        def create(self, path, body):
            self.posts += 1
            if self.reads < self.appears_after:
                raise KubeError(403, "Forbidden", 'pods "cuda-probe" is forbidden: error looking up service '
                                'account gpu-lab/default: serviceaccount "default" not found')
            return body

        def get(self, path, missing_ok=False):
            assert path == "/api/v1/namespaces/gpu-lab/serviceaccounts/default"
            self.reads += 1
            return {} if self.reads >= self.appears_after else None

    kube = Kube(appears_after=3)
    assert manifest_apply._create(kube, "/api/v1/namespaces/gpu-lab/pods", {"x": 1}, pause=lambda s: None) == {"x": 1}
    assert kube.posts == 2 and kube.reads == 3
    clock = iter(range(0, 1000, 10))
    with pytest.raises(KubeError, match="ServiceAccount gpu-lab/default did not appear within 60s"):
        manifest_apply._create(Kube(appears_after=10 ** 6), "/p", {}, clock=lambda: next(clock), pause=lambda s: None)
