"""pod_wait: input rules and what a timeout says (its waits on a real Pod are in tests/cluster/)."""
import pod_wait
from ansible.module_utils.kube import pods as pod_state


def test_needs_a_phase_or_a_condition(module_runner, tmp_path):
    out = module_runner(pod_wait.main, {"kubeconfig": str(tmp_path / "kc"), "namespace": "n", "name": "p"})
    assert out["failed"] and "one of the following is required: phase, condition" in out["msg"]


def test_record_needs_a_condition(module_runner, tmp_path):
    out = module_runner(pod_wait.main, {"kubeconfig": str(tmp_path / "kc"), "namespace": "n",
                                        "name": "p", "phase": "Running", "record": str(tmp_path / "r")})
    assert out["failed"] and "record" in out["msg"] and "condition" in out["msg"]


def test_what_the_pod_showed_is_described():
    pod = {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}}
    assert pod_state.describe(pod) == ("phase Pending; PodScheduled=False (Unschedulable: 0/3 nodes "
                                      "are available: 3 Insufficient nvidia.com/gpu.)")
    assert pod_state.describe(None) == "the Pod does not exist"


def test_reached():
    pod = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    assert pod_state.reached(pod, "Running", None)
    assert pod_state.reached(pod, None, {"type": "Ready", "status": "True"})
    assert not pod_state.reached(pod, "Running", {"type": "PodScheduled", "status": "False"})
    assert not pod_state.reached(None, "Running", None)


def test_the_line_for_a_person():
    """msg: the recorded reason and message on one line; a kept record says what the Pod is now."""
    p = {"namespace": "gpu-lab", "name": "cuda-probe", "condition": {"type": "PodScheduled", "status": "False"}}
    recorded = {"recorded": "Unschedulable\n0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n",
                "phase": "Pending"}
    assert pod_state.summary(recorded, p) == "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    kept = dict(recorded, kept_existing=True, phase="Running")
    assert pod_state.summary(kept, p).endswith("(recorded earlier; the Pod is now Running)")
    seen = {"condition": {"status": "True"}, "phase": "Running"}
    assert pod_state.summary(seen, dict(p, condition={"type": "Ready", "status": "True"})) == "Ready=True"
    assert pod_state.summary({"phase": "Running"}, dict(p, condition=None)) == "Pod gpu-lab/cuda-probe is Running"


class _Module:
    def __init__(self, check_mode=False, **params):
        self.check_mode = check_mode
        self.params = dict({"kubeconfig": "kc", "context": None, "namespace": "gpu-lab", "name": "probe",
                            "record": None, "overwrite": False, "wait_timeout": 0, "phase": "Running",
                            "condition": None}, **params)


def _serving(monkeypatch, pod):
    class Kube:
        def get(self, path, missing_ok=False):
            assert path == "/api/v1/namespaces/gpu-lab/pods/probe" and missing_ok
            return pod
    monkeypatch.setattr(pod_state, "client", lambda kubeconfig, context: Kube())


def test_a_wait_that_runs_out_names_the_pod_what_it_waited_for_and_what_it_saw(monkeypatch):
    import pytest
    _serving(monkeypatch, {"status": {"phase": "Pending"}})
    with pytest.raises(pod_state.PodWaitError) as err:
        pod_state.wait_pod(_Module())
    assert str(err.value) == "Pod gpu-lab/probe: waited 0s for phase Running; last seen: phase Pending"


def test_a_pod_already_there_is_not_waited_for(monkeypatch):
    _serving(monkeypatch, {"status": {"phase": "Running"}})
    out = pod_state.wait_pod(_Module(wait_timeout=60))
    assert out["phase"] == "Running" and out["waited"] == 0 and out["msg"] == "Pod gpu-lab/probe is Running"


def test_check_mode_with_a_record_says_what_a_real_run_would_wait_for(monkeypatch, tmp_path):
    _serving(monkeypatch, None)
    out = pod_state.wait_pod(_Module(check_mode=True, wait_timeout=60, phase=None, record=str(tmp_path / "r"),
                                     condition={"type": "PodScheduled", "status": "False"}))
    assert out["changed"] and out["phase"] is None and not (tmp_path / "r").exists()
    assert out["msg"].startswith("check mode: a real run waits up to 60s for PodScheduled=False on Pod gpu-lab/probe")
    assert out["msg"].endswith("(now: the Pod does not exist)")
