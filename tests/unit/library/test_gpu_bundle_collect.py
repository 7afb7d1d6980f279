"""gpu_bundle_collect: the module's main() refusing what it cannot collect before it writes anything
(its collection from a live cluster: tests/cluster/test_support_bundle.py; the bundle's pieces:
tests/unit/bundle/)."""
import base64

import pytest

import gpu_bundle_collect


@pytest.mark.parametrize("args,words", [
    ({"pods": ["no-slash"]}, "not NAMESPACE/NAME"),
    ({"nodes": {"n1": {"files": {}}}}, "give what gpu_bundle_node returned"),
    ({"nodes": {"bad/name": {"msg": "x"}}}, "not a node name"),
    ({"stack_selectors": [","]}, "empty label selector"),
])
def test_bad_input_is_refused_plainly_and_writes_nothing(tmp_path, module_runner, args, words):
    out = module_runner(gpu_bundle_collect.main, dict({"kubeconfig": str(tmp_path / "none"),
                                                       "dest": str(tmp_path / "b")}, **args))
    assert out["failed"] and words in out["msg"] and not (tmp_path / "b").exists()


def test_a_bad_kubeconfig_is_named(tmp_path, module_runner):
    out = module_runner(gpu_bundle_collect.main, {"kubeconfig": str(tmp_path / "none"), "dest": str(tmp_path / "b"),
                                                  "nodes": {"n1": {"files": {"x.txt": base64.b64encode(b"x").decode()},
                                                                   "index": {}}}})
    assert out["failed"] and "kubeconfig" in out["msg"] and str(tmp_path / "none") in out["msg"]
    assert not (tmp_path / "b").exists()
