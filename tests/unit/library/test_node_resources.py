"""node_resources: input validation (its cluster behaviour is in Molecule's step6)."""
import node_resources
import pytest
from ansible.module_utils.kube import nodes as node_status


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
    assert node_status.same_amount("32Gi", "34359738368")
    assert not node_status.same_amount("4", "20")
    assert not node_status.same_amount(None, "4")


def test_create_needs_a_template_that_is_a_node(module_runner, tmp_path):
    base = {"kubeconfig": str(tmp_path / "none"), "names": ["n"], "resources": {"cpu": "8"},
            "missing": "create"}
    out = module_runner(node_resources.main, base)
    assert out["failed"] and "missing=create needs template" in out["msg"]
    out = module_runner(node_resources.main, dict(base, template={"kind": "Pod"}))
    assert out["failed"] and "it must be a Node" in out["msg"]
    out = module_runner(node_resources.main, dict(base, template={"metadata": {"name": "x"}}))
    assert out["failed"] and "names each one from names" in out["msg"]
    out = module_runner(node_resources.main, dict(base, template={"metadata": []}))
    assert out["failed"] and "template.metadata is a list" in out["msg"]
    out = module_runner(node_resources.main, dict(base, template={}, workers=0))
    assert out["failed"] and "workers is 0" in out["msg"]


def test_node_body_names_the_node_and_carries_the_amounts():
    template = {"metadata": {"labels": {"type": "kwok"}}, "status": {"capacity": {"cpu": "1"}}}
    body = node_status.node_body(template, "n-3", {"cpu": "8", "pods": "110"}, ["capacity", "allocatable"])
    assert body["kind"] == "Node" and body["metadata"]["name"] == "n-3"
    assert body["metadata"]["labels"] == {"type": "kwok", "kubernetes.io/hostname": "n-3"}
    assert body["status"]["capacity"] == {"cpu": "8", "pods": "110"}
    assert body["status"]["allocatable"] == {"cpu": "8", "pods": "110"}
    assert template["status"]["capacity"] == {"cpu": "1"}  # the template is not changed


def test_each_keeps_order_and_reports_errors_per_item():
    from ansible.module_utils.kube.client import Kube, KubeError
    kube = Kube.__new__(Kube)
    kube._conn, kube._resources = None, {}
    seen = set()

    def work(client, item):
        assert client is not kube or item == "solo"  # threads get their own clients
        seen.add(id(client))
        if item % 7 == 0:
            raise KubeError(409, "Conflict", "exists")
        return item * 2

    done = kube.each(work, range(30), workers=4)
    assert [item for item, _, _ in done] == list(range(30))
    assert all(answer == item * 2 for item, answer, error in done if error is None)
    assert [item for item, _, error in done if error is not None] == [0, 7, 14, 21, 28]
    assert 1 <= len(seen) <= 4
    assert kube.each(lambda c, i: c is kube, ["solo"], workers=8) == [("solo", True, None)]


class FakeKube(object):
    """Lists and watches from a script: [(kind, node) ...] per watch, or a KubeError."""

    def __init__(self, nodes, watches):
        self.nodes, self.watches, self.lists, self.versions = nodes, list(watches), 0, []

    def listing(self, path):
        self.lists += 1
        return [dict(n) for n in self.nodes], str(self.lists)

    def watch(self, path, version, seconds):
        self.versions.append(version)
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            yield event


def node(name, ready, version="9"):
    return {"metadata": {"name": name, "resourceVersion": version},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_wait_ready_lists_once_then_follows_the_watch():
    from ansible.module_utils.kube.client import KubeError
    kube = FakeKube([node("a", False), node("b", True)],
                    [KubeError(410, "Gone", "too old"),  # the version is gone: list again
                     [("MODIFIED", node("b", True, "11")), ("BOOKMARK", {"metadata": {"resourceVersion": "12"}})],
                     [("MODIFIED", node("a", True, "13")), ("MODIFIED", node("c", False, "14"))]])
    existing = {}
    pending, _ = node_status.wait_ready(kube, ["a", "b"], existing, 30)
    assert pending == [] and kube.lists == 2 and kube.versions == ["1", "2", "12"]
    assert node_status.is_ready(existing["a"])


def test_wait_ready_gives_up_at_the_timeout_naming_the_rest():
    ticks = iter(range(0, 100, 7))
    kube = FakeKube([node("a", False), node("b", False)],
                    [[("MODIFIED", node("b", True, "3"))]] + [[] for _ in range(20)])
    pending, waited = node_status.wait_ready(kube, ["a", "b"], {}, 30, clock=lambda: next(ticks))
    assert pending == ["a"] and waited >= 30


def test_a_patch_the_api_server_stored_otherwise_fails_naming_the_node():
    """The patch answer is the node as stored: an amount other than the one sent (an admission
    webhook rewrote it) fails instead of being reported as advertised."""
    class Kube:
        def __init__(self, stored):
            self.stored = stored

        def each(self, work, items, workers=8):
            return [(name, {"metadata": {"name": name}, "status": {"allocatable": {"nvidia.com/gpu": self.stored}}},
                     None) for name in items]

    patches = {"lab-node-1": {"allocatable": {"nvidia.com/gpu": "20"}}}
    existing = {"lab-node-1": {}}
    node_status._patch(Kube("20"), patches, existing, 1, [])
    assert existing["lab-node-1"]["status"]["allocatable"]["nvidia.com/gpu"] == "20"
    with pytest.raises(node_status.NodeStatusError, match=r"lab-node-1 allocatable nvidia.com/gpu=4 \(sent 20\)"):
        node_status._patch(Kube("4"), patches, {"lab-node-1": {}}, 1, [])


def gpus(name, allocatable, version="9"):
    return {"metadata": {"name": name, "resourceVersion": version},
            "status": {"allocatable": {"nvidia.com/gpu": allocatable}, "conditions": []}}


def test_posted_waits_for_the_kubelet_to_post_the_amount():
    """state=posted: the amount arrives from the kubelet (4 first, then the plugin's 20)."""
    kube = FakeKube([gpus("lab-node-1", "4")], [[("MODIFIED", gpus("lab-node-1", "4", "10")),
                                                 ("MODIFIED", gpus("lab-node-1", "20", "11"))]])
    existing = {}
    pending, _ = node_status.wait_ready(kube, ["lab-node-1"], existing, 30,
                                        test=node_status.posts({"nvidia.com/gpu": "20"}))
    assert pending == [] and existing["lab-node-1"]["status"]["allocatable"]["nvidia.com/gpu"] == "20"
    assert node_status.posts({"nvidia.com/gpu": "20"})(gpus("x", "19")) is False
    assert node_status.posts({"nvidia.com/gpu": "20"})({"metadata": {"name": "x"}}) is False


def test_posted_names_what_each_node_posts_when_it_gives_up():
    import pytest
    kube = FakeKube([gpus("lab-node-1", "19")], [])
    existing = {"lab-node-1": gpus("lab-node-1", "19")}
    params = {"fields": ["allocatable"], "wait_timeout": 0}
    with pytest.raises(node_status.NodeStatusError) as err:
        node_status._wait_posted(kube, params, ["lab-node-1"], existing, {"nvidia.com/gpu": "20"}, False)
    assert str(err.value) == ("waited 0s for the kubelet of lab-node-1 to post nvidia.com/gpu=20 (a device plugin's "
                              "devices): lab-node-1 posts nvidia.com/gpu=19")
    assert err.value.result["not_posted"] == ["lab-node-1"] and err.value.result["changed"] is False
    # check mode only looks
    looked = node_status._wait_posted(kube, params, ["lab-node-1"], existing, {"nvidia.com/gpu": "20"}, True)
    assert looked["not_posted"] == ["lab-node-1"] and looked["changed"] is False
