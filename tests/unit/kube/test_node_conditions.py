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
