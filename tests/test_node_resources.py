"""node_resources: input validation (its cluster behaviour is in Molecule's step6)."""
import node_resources


def test_non_integer_extended_resource_is_refused(module_runner, tmp_path):
    out = module_runner(node_resources.main, {"kubeconfig": str(tmp_path / "none"),
                                              "names": ["lab-node-0"],
                                              "resources": {"nvidia.com/gpu": "4.5"}})
    assert out["failed"] and "not a whole number" in out["msg"]


def test_bad_quantity_is_refused(module_runner, tmp_path):
    out = module_runner(node_resources.main, {"kubeconfig": str(tmp_path / "none"),
                                              "names": ["n"], "resources": {"memory": "lots"}})
    assert out["failed"] and "not a Kubernetes quantity" in out["msg"]


def test_unreadable_kubeconfig_is_reported(module_runner, tmp_path):
    out = module_runner(node_resources.main, {"kubeconfig": str(tmp_path / "none"),
                                              "names": ["n"], "resources": {"nvidia.com/gpu": "4"}})
    assert out["failed"] and "kubeconfig" in out["msg"]


def test_quantities_compare_by_value():
    assert node_resources.same_amount("32Gi", "34359738368")
    assert not node_resources.same_amount("4", "20")
    assert not node_resources.same_amount(None, "4")
