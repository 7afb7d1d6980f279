"""node_conditions (issue 39): a Node's conditions read from the Node object, the wait for
statuses and the gate's refusal (against a real API server and the real sentinel:
tests/cluster/test_real_node.py)."""
import node_conditions as module
import pytest

from ansible.module_utils.kube import node_conditions as nc
from ansible.module_utils.lab import wait as lab_wait

BREAKS = {"type": "RuntimeBreaksOnRestart", "status": "True", "reason": "NextStartServesNoCRI",
          "message": "next start of containerd 1.6.20 serves no CRI: default_runtime_name runc is not among "
                     "runtimes nvidia - the containerd.runtimes table is replaced whole by /etc/containerd/conf.d/99-nvidia.toml",
          "lastTransitionTime": "2026-12-05T03:26:43Z"}
PENDING = {"type": "RuntimeRestartPending", "status": "True", "reason": "LoadedDiffersFromNextStart",
           "message": "loaded: runc; next start: nvidia (runtimes differ; ...)"}


def _serving(monkeypatch, *nodes):
    """An API server whose Node lab-node-1 is each of nodes in turn (the last one stays)."""
    seen = list(nodes)

    class Kube:
        def get(self, path, missing_ok=False):
            assert path == "/api/v1/nodes/lab-node-1" and missing_ok
            return seen.pop(0) if len(seen) > 1 else seen[0]
    monkeypatch.setattr(nc, "client", lambda kubeconfig, context: Kube())
    monkeypatch.setattr(nc, "wait_until", _no_sleep(lab_wait.wait_until))


def _no_sleep(wait):
    def quick(what, check, timeout, interval=1.0, describe=str):
        ticks = iter(range(10 ** 6))
        return wait(what, check, timeout, interval, clock=lambda: next(ticks), pause=lambda s: None,
                    describe=describe)
    return quick


def node(*conds):
    return {"metadata": {"name": "lab-node-1"}, "status": {"conditions": list(conds)}}


def params(**more):
    return dict({"kubeconfig": "kc", "context": None, "name": "lab-node-1",
                 "types": list(nc.SENTINEL_TYPES), "wait_for": None, "wait_timeout": 0, "refuse_on": None}, **more)


def test_reads_both_and_says_absent(monkeypatch):
    _serving(monkeypatch, node(BREAKS))
    out = nc.run(params())
    assert out["conditions"]["RuntimeBreaksOnRestart"]["status"] == "True"
    assert out["conditions"]["RuntimeBreaksOnRestart"]["message"] == BREAKS["message"]
    assert out["conditions"]["RuntimeRestartPending"]["status"] == "Absent"
    assert out["refused"] == [] and not out["changed"]
    assert out["msg"].startswith("Node lab-node-1: RuntimeBreaksOnRestart=True (next start of containerd 1.6.20")


def test_refuse_on_names_the_refusing_types(monkeypatch):
    _serving(monkeypatch, node(BREAKS, PENDING))
    out = nc.run(params(refuse_on={"RuntimeBreaksOnRestart": "True"}))
    assert out["refused"] == ["RuntimeBreaksOnRestart"]
    _serving(monkeypatch, node(dict(BREAKS, status="False"), PENDING))
    assert nc.run(params(refuse_on={"RuntimeBreaksOnRestart": "True"}))["refused"] == []


def test_waits_until_the_statuses(monkeypatch):
    _serving(monkeypatch, node(), node(PENDING), node(PENDING, BREAKS))
    out = nc.run(params(wait_for={"RuntimeBreaksOnRestart": "True", "RuntimeRestartPending": "True"},
                        wait_timeout=30))
    assert {k: v["status"] for k, v in out["conditions"].items()} == {
        "RuntimeRestartPending": "True", "RuntimeBreaksOnRestart": "True"}
    assert out["waited"] == 3  # a clock tick per look: the third read had both


def test_timeout_says_what_the_node_showed(monkeypatch):
    _serving(monkeypatch, node(PENDING))
    with pytest.raises(nc.NodeConditionsError) as err:
        nc.run(params(wait_for={"RuntimeBreaksOnRestart": "False"}, wait_timeout=3))
    text = str(err.value)
    assert text.startswith("Node lab-node-1: waited 3s for RuntimeBreaksOnRestart=False; last seen: ")
    assert "RuntimeBreaksOnRestart=Absent" in text and "RuntimeRestartPending=True (loaded: runc" in text


def test_a_missing_node_is_named(monkeypatch):
    _serving(monkeypatch, None)
    with pytest.raises(nc.NodeConditionsError, match="Node lab-node-1 does not exist"):
        nc.run(params())


def test_nothing_to_read_is_refused():
    with pytest.raises(nc.NodeConditionsError, match="name at least one condition type"):
        nc.node_conditions("kc", "lab-node-1", [])


def test_module_fails_with_the_kubeconfig_named(module_runner, tmp_path):
    out = module_runner(module.main, {"kubeconfig": str(tmp_path / "nope"), "name": "lab-node-1"})
    assert out["failed"] and str(tmp_path / "nope") in out["msg"]


# ---- the fleet: every Node, the table, stand-ins posted on nodes without a sentinel

class Fleet:
    """An API server of many Nodes (a list call pages by 500, as kube.items does) that records patches."""

    def __init__(self, nodes):
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.patches = []

    def items(self, path, labelSelector=None):
        assert path == "/api/v1/nodes"
        return list(self.nodes.values())

    def get(self, path, missing_ok=False):
        return self.nodes.get(path.rsplit("/", 1)[1])

    def patch(self, path, body, kind="strategic"):
        self.patches.append((path, body))
        name = path.split("/")[-2]
        conds = [c for c in self.nodes[name]["status"]["conditions"] if c["type"] != body["status"]["conditions"][0]["type"]]
        self.nodes[name]["status"]["conditions"] = conds + body["status"]["conditions"]


def fleet_node(name, *conds):
    return {"metadata": {"name": name}, "status": {"conditions": [{"type": "Ready", "status": "True"}] + list(conds)}}


def test_the_fleet_table_names_the_nodes_that_break_first(monkeypatch):
    """1000 nodes (the fleet profile): two break, three have a restart pending, one says False, the rest none."""
    nodes = [fleet_node("lab-node-%d" % i) for i in range(1000)]
    for i in (7, 420):
        nodes[i]["status"]["conditions"] += [dict(BREAKS, message="stand-in %d" % i), PENDING]
    nodes[9]["status"]["conditions"].append(PENDING)
    nodes[3]["status"]["conditions"].append(dict(BREAKS, status="False"))
    kube = Fleet(nodes)
    monkeypatch.setattr(nc, "client", lambda kubeconfig, context: kube)
    out = nc.run(params(name=None))
    assert [r["name"] for r in out["nodes"][:3]] == ["lab-node-420", "lab-node-7", "lab-node-9"]
    lines = out["table"].splitlines()
    assert lines[0] == ("2 of 1000 nodes break at their next reboot (RuntimeBreaksOnRestart=True); 3 have a "
                        "restart pending; 0 Unknown; 997 carry no sentinel condition")
    assert lines[4:] == ["| lab-node-420 | True | True | stand-in 420 |", "| lab-node-7 | True | True | stand-in 7 |",
                         "| lab-node-9 | Absent | True | %s |" % PENDING["message"]]
    assert out["msg"] == lines[0] and not out["changed"]


def test_post_writes_only_what_differs_and_not_in_check_mode(monkeypatch):
    kube = Fleet([fleet_node("lab-node-0"), fleet_node("lab-node-2")])
    monkeypatch.setattr(nc, "client", lambda kubeconfig, context: kube)
    stand_in = [{"name": "lab-node-0", "type": "RuntimeBreaksOnRestart", "status": "True", "reason": "LabStandIn",
                 "message": "stand-in set by the lab (kwok runs no containerd)"}]
    out = nc.run(params(name=None, post=stand_in), check_mode=True)
    assert out["posted"] == ["lab-node-0"] and out["changed"] and kube.patches == []
    out = nc.run(params(name=None, post=stand_in))
    assert out["posted"] == ["lab-node-0"] and [p for p, _ in kube.patches] == ["/api/v1/nodes/lab-node-0/status"]
    assert out["table"].startswith("1 of 2 nodes break at their next reboot")
    assert nc.run(params(name=None, post=stand_in))["changed"] is False     # the second run: nothing to write
    with pytest.raises(nc.NodeConditionsError, match=r"post\[0\].*status is 'yes'"):
        nc.run(params(name=None, post=[dict(stand_in[0], status="yes")]))
    with pytest.raises(nc.NodeConditionsError, match="Node lab-node-9 does not exist"):
        nc.run(params(name=None, post=[dict(stand_in[0], name="lab-node-9")]))
