"""manifest_drift: what counts as a difference (its cluster reads are in tests/cluster/)."""
import manifest_drift
from ansible.module_utils.manifest_compare import differences

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
