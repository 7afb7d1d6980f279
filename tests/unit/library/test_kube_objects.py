"""kube_objects: its refusals before any API call (what it reads, against kubernetes.core.k8s_info on
a real API server: tests/cluster/test_live.py)."""
import kube_objects


def test_a_name_with_selectors_is_refused_before_the_kubeconfig_is_read(module_runner, tmp_path):
    out = module_runner(kube_objects.main, {"kubeconfig": str(tmp_path / "none"), "kind": "Pod",
                                            "name": "p", "field_selectors": ["spec.nodeName=n"]})
    assert out["failed"] and "name p is one object" in out["msg"] and "not both" in out["msg"]


def test_an_unreadable_kubeconfig_is_named(module_runner, tmp_path):
    out = module_runner(kube_objects.main, {"kubeconfig": str(tmp_path / "none"), "kind": "Node"})
    assert out["failed"] and str(tmp_path / "none") in out["msg"]


def test_a_kind_is_required(module_runner, tmp_path):
    out = module_runner(kube_objects.main, {"kubeconfig": str(tmp_path / "none")})
    assert out["failed"] and "kind" in out["msg"]
