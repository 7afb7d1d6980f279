"""tools/lab_snapshot.py require-real: .ci/run's check that the lab the tests run beside is whole."""
import sys
from lab_testing import ROOT  # tests/lab_testing.py

sys.path.insert(0, str(ROOT / "tools"))
import lab_snapshot  # noqa: E402


def whole():
    alive = {"alive": True, "pid": "1", "cmdline": "x"}
    return {"exists": {"lab folder": True, "state folder": True, "cluster folder": True},
            "nodes": {"lab-node-0": "True", "lab-node-1": "True", "lab-node-2": "True"},
            "real node": {"processes": {"containerd.pid": alive, "kubelet.pid": alive, "holder.pid": alive},
                          "netns": True}}


def test_a_whole_lab_misses_nothing():
    assert lab_snapshot.missing_for_real(whole()) == []


def test_a_kwok_fallback_or_a_not_ready_node_is_named():
    snap = whole()
    snap["real node"] = {"records": {}, "processes": {}, "netns": None, "mounts": None}
    snap["nodes"]["lab-node-1"] = "Unknown"
    missing = lab_snapshot.missing_for_real(snap)
    assert "node lab-node-1 Ready (it is Unknown)" in missing
    assert "lab-node-1's containerd process (the lab fell back to kwok?)" in missing
    assert "lab-node-1's network namespace" in missing


def test_no_lab_at_all_is_named():
    snap = {"exists": {"lab folder": False, "state folder": False, "cluster folder": False}}
    missing = lab_snapshot.missing_for_real(snap)
    assert missing[:3] == ["lab folder", "state folder", "cluster folder"]
    assert "node lab-node-1" in missing
