"""Rollout judgment: the blocker from real scheduler messages, and the wait."""
import pytest

from ansible.module_utils.kube import rollout as ro

# messages as kube-scheduler v1.36.3 wrote them on this project's kwok cluster
MEMORY_136 = ("0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't satisfy plugin(s) "
              "[NodeAffinity]. no new claims to deallocate, preemption: 0/3 nodes are available: "
              "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for "
              "scheduling.")
GPU_136 = ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu. no new claims to deallocate, "
           "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


@pytest.mark.parametrize("message,blocker", [
    (MEMORY_136, "insufficient-memory"),
    (GPU_136, "insufficient-nvidia.com/gpu"),
    ("0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's node "
     "affinity/selector. preemption: 0/3 nodes are available.", "insufficient-memory"),
    ("0/5 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 3 node(s) didn't "
     "satisfy plugin(s) [NodeAffinity].", "insufficient-cpu,insufficient-memory"),
    ("0/1 nodes are available: 1 node(s) had untolerated taint {gpu: true}. preemption: x",
     "untolerated-taint"),
    ("0/1 nodes are available: 1 Too many pods. preemption: x", "too-many-pods"),
    ("", None),
])
def test_blocker_from_the_schedulers_message(message, blocker):
    assert ro.blocker_from_message(message) == blocker


def snap(updated, ready, pods, generation=2, observed=2, max_unavailable=1, max_surge=0, desired=3):
    return {"generation": generation, "observed_generation": observed, "desired": desired,
            "current": desired, "updated": updated, "ready": ready, "available": ready,
            "unavailable": desired - ready, "max_unavailable": max_unavailable, "max_surge": max_surge,
            "min_ready_seconds": 0, "terminating": 0, "template_images": ["new"], "pods": pods}


def pod(name, image, ready=True, unschedulable=False, message=None):
    return {"name": name, "images": [image], "phase": "Pending" if unschedulable else "Running",
            "ready": ready, "unschedulable": unschedulable, "scheduler_message": message,
            "revision": image, "ready_since": None, "node": None, "created": None}


STALLED = snap(1, 2, [pod("a", "old"), pod("b", "old"),
                      pod("c", "new", ready=False, unschedulable=True, message=MEMORY_136)])


def test_judge_counts_from_status_and_pods():
    verdict = ro.judge(STALLED)
    assert (verdict["desired"], verdict["updated"], verdict["ready"]) == (3, 1, 2)
    assert verdict["old_image_pods"] == 2 and verdict["stalled"]
    assert verdict["blocker"] == "insufficient-memory"
    assert ro.rollout_report(verdict) == ("DESIRED=3\nUPDATED=1\nREADY=2\nOLD_IMAGE_PODS=2\n"
                                          "MAX_UNAVAILABLE=1\nBLOCKER=insufficient-memory\n")


def test_a_completed_rollout_reports_no_blocker():
    done = snap(3, 3, [pod(n, "new") for n in "abc"])
    verdict = ro.judge(done)
    assert verdict["complete"] and verdict["blocker"] == "none" and not verdict["stalled"]


def test_wait_needs_the_status_to_stop_moving_where_the_controllers_rule_does_not_decide():
    """With surge the controller's rule is not modelled: a stall must hold for three reads."""
    moving = snap(0, 3, [pod("a", "old"), pod("b", "old"), pod("c", "old")], observed=1)
    surging = dict(STALLED, max_surge=1)
    reads = iter([moving, surging, surging, surging])
    clock = iter(range(100))
    snapshot, verdict, waited, state = ro.wait_settled(lambda: next(reads), timeout=60,
                                                       clock=lambda: next(clock),
                                                       pause=lambda s: None)
    assert state == "stalled" and verdict["updated"] == 1
    with pytest.raises(StopIteration):
        next(reads)  # it used every read: three identical ones before calling it a stall


def test_wait_times_out_when_nothing_settles():
    moving = iter(snap(i % 2, 2, [pod("a", "old")], observed=1) for i in range(100))
    clock = iter(range(0, 1000, 10))
    *_, state = ro.wait_settled(lambda: next(moving), timeout=30, clock=lambda: next(clock),
                                pause=lambda s: None)
    assert state == "timeout"


def test_a_single_read_says_what_it_shows():
    *_, state = ro.wait_settled(lambda: STALLED, timeout=0)
    assert state == "stalled"


def test_before_an_update_complete_must_hold_for_settle_reads():
    """wait_for=complete: a complete status seen once is not enough - at 500 kwok nodes the
    controller was still catching up, and an update pushed then replaced 196 Pods at once."""
    done = snap(3, 3, [pod(n, "new") for n in "abc"])
    flicker = snap(3, 2, [pod("a", "new"), pod("b", "new"), pod("c", "new", ready=False)])
    reads = iter([done, flicker, done, done, done, done])
    clock = iter(range(100))
    *_, waited, state = ro.wait_settled(lambda: next(reads), timeout=60, until_complete=True,
                                        clock=lambda: next(clock), pause=lambda s: None)
    assert state == "complete"
    assert next(reads) is done  # five reads used: done, flicker, then three identical done
    with pytest.raises(StopIteration):
        next(reads)


def test_before_an_update_a_stall_is_not_an_answer():
    clock = iter(range(0, 1000, 10))
    *_, state = ro.wait_settled(lambda: STALLED, timeout=30, until_complete=True,
                                clock=lambda: next(clock), pause=lambda s: None)
    assert state == "timeout"


def test_without_until_complete_complete_ends_the_wait_at_once():
    done = snap(3, 3, [pod(n, "new") for n in "abc"])
    reads = iter([done, STALLED])
    *_, state = ro.wait_settled(lambda: next(reads), timeout=60, pause=lambda s: None)
    assert state == "complete" and next(reads) is STALLED


def test_before_an_update_pods_are_listed_only_once_the_status_says_complete():
    """peek (the DaemonSet alone) gates the Pod listing: a fleet's thousands of Pods are not
    listed every second while the status still counts them in."""
    rolling = snap(2, 2, None)
    done_status = snap(3, 3, None)
    done = snap(3, 3, [pod(n, "new") for n in "abc"])
    peeks = iter([rolling, rolling, done_status, done_status, done_status, rolling])
    full = []

    def read():
        full.append(1)
        return done

    clock = iter(range(100))
    *_, state = ro.wait_settled(read, timeout=60, until_complete=True, peek=lambda: next(peeks),
                                clock=lambda: next(clock), pause=lambda s: None)
    assert state == "complete" and len(full) == 3  # no Pod listing during the two rolling peeks
    assert next(peeks) is rolling  # two peeks rolling, then three with a full read each


def test_before_an_update_a_timeout_while_peeking_reports_a_full_read():
    clock = iter(range(0, 1000, 10))
    rolling = snap(2, 2, None)
    snapshot, verdict, _, state = ro.wait_settled(lambda: STALLED, timeout=30, until_complete=True,
                                                  peek=lambda: rolling, clock=lambda: next(clock),
                                                  pause=lambda s: None)
    assert state == "timeout" and snapshot is STALLED and verdict["old_image_pods"] == 2


class _FakeKube:
    """The two reads snapshot() makes, answered from plain objects (no cluster needed)."""
    def __init__(self, ds, pods):
        self.ds, self.pods = ds, pods

    def get(self, path):
        return self.ds

    def items(self, path, **params):
        return self.pods


def test_a_terminating_pod_is_not_counted():
    """On a real node a replaced Pod stays listed while its container stops (deletionTimestamp
    set): the snapshot leaves it out, as the DaemonSet's own status does."""
    owner = [{"uid": "u1"}]
    ds = {"metadata": {"uid": "u1", "generation": 2},
          "spec": {"selector": {"matchLabels": {"app": "t"}},
                   "updateStrategy": {"rollingUpdate": {"maxUnavailable": 1}},
                   "template": {"spec": {"containers": [{"name": "c", "image": "img:new"}]}}},
          "status": {"observedGeneration": 2, "desiredNumberScheduled": 3, "updatedNumberScheduled": 1,
                     "numberReady": 2}}

    def p(name, image, deleting=False):
        meta = {"name": name, "ownerReferences": owner}
        if deleting:
            meta["deletionTimestamp"] = "2026-12-01T23:40:00Z"
        return {"metadata": meta, "spec": {"nodeName": "n", "containers": [{"image": image}]},
                "status": {"phase": "Running"}}
    pods = [p("a", "img:old"), p("b", "img:old"), p("c", "img:old", deleting=True), p("d", "img:new")]
    snap = ro.snapshot(_FakeKube(ds, pods), "ns", "t")
    assert sorted(x["name"] for x in snap["pods"]) == ["a", "b", "d"]
    assert ro.judge(snap)["old_image_pods"] == 2


def test_a_stall_the_controller_cannot_move_ends_the_wait_at_its_first_read():
    """maxUnavailable 1, one new Pod refused by the scheduler, every old Pod Ready, status in
    step with the Pods: the DaemonSet controller deletes and creates nothing more."""
    moving = snap(0, 3, [pod("a", "old"), pod("b", "old"), pod("c", "old")], observed=1)
    reads = iter([moving, STALLED, STALLED])
    *_, state = ro.wait_settled(lambda: next(reads), timeout=60, pause=lambda s: None)
    assert state == "stalled" and next(reads) is STALLED   # the second STALLED was not needed


@pytest.mark.parametrize("why,changed", [
    ("the status lags the Pods (updated 0, one new Pod listed)", {"updated": 0}),
    ("the status lags the Pods (ready)", {"ready": 3}),
    ("the spec is not observed yet", {"observed_generation": 1}),
    ("a Pod is terminating", {"terminating": 1}),
    ("maxUnavailable 2: the controller may still delete another old Pod", {"max_unavailable": 2}),
    ("50% of 3 rounds up to 2", {"max_unavailable": "50%"}),
    ("surge", {"max_surge": 1}),
    ("minReadySeconds", {"min_ready_seconds": 10}),
    ("no rolling update (OnDelete)", {"max_unavailable": None}),
    ("a node without its Pod", {"desired": 4}),
])
def test_a_stall_the_rule_does_not_call_final(why, changed):
    assert ro.stall_is_final(STALLED)
    assert not ro.stall_is_final(dict(STALLED, **changed)), why


def test_a_stall_is_final_when_refused_pods_reach_a_scaled_max_unavailable():
    two = snap(2, 2, [pod("a", "old"), pod("b", "old"),
                      pod("c", "new", ready=False, unschedulable=True, message=MEMORY_136),
                      pod("d", "new", ready=False, unschedulable=True, message=MEMORY_136)],
               max_unavailable="50%", desired=4)
    assert ro.stall_is_final(two)
    assert not ro.stall_is_final(dict(two, max_unavailable="75%"))   # 3 may be unavailable
    pending = dict(two, pods=two["pods"][:3] + [pod("d", "new", ready=False)])
    assert not ro.stall_is_final(pending)   # d may still start: not refused by the scheduler


@pytest.mark.parametrize("value,total,want", [(1, 3, 1), ("10%", 25, 3), ("50%", 3, 2), ("100%", 3, 3),
                                              ("0%", 3, 0), (None, 3, 0), ("2", 3, 2)])
def test_int_or_percent_scaled_as_the_controller_does(value, total, want):
    assert ro.scaled(value, total) == want


def test_before_an_update_complete_ends_at_once_when_desired_is_every_node():
    done = snap(3, 3, [pod(n, "new") for n in "abc"])
    reads = iter([done, done])
    *_, state = ro.wait_settled(lambda: next(reads), timeout=60, until_complete=True,
                                node_count=lambda: 3, pause=lambda s: None)
    assert state == "complete" and next(reads) is done   # one read was enough


def test_before_an_update_complete_on_fewer_nodes_than_the_cluster_has_must_settle():
    """Desired 3 of 5 nodes: two may still carry the not-ready:NoSchedule taint of fresh nodes."""
    done = snap(3, 3, [pod(n, "new") for n in "abc"])
    reads = iter([done, done, done, done])
    clock = iter(range(100))
    *_, state = ro.wait_settled(lambda: next(reads), timeout=60, until_complete=True, node_count=lambda: 5,
                                clock=lambda: next(clock), pause=lambda s: None)
    assert state == "complete" and next(reads) is done   # three reads used


class _NodeKube:
    def __init__(self, page, nodes):
        self.page, self.nodes, self.listed = page, nodes, 0

    def get(self, path, params=None):
        assert path == "/api/v1/nodes" and params == {"limit": "1"}
        return self.page

    def items(self, path, **params):
        self.listed += 1
        return self.nodes


def test_nodes_are_counted_from_one_item_and_the_remaining_count():
    kube = _NodeKube({"items": [{}], "metadata": {"remainingItemCount": 4999}}, [])
    assert ro.count_nodes(kube) == 5000 and kube.listed == 0
    listed = _NodeKube({"items": [{}], "metadata": {"continue": "x"}}, [{}, {}, {}])
    assert ro.count_nodes(listed) == 3 and listed.listed == 1   # no count given: listed
