# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a DaemonSet rollout from the cluster and judge whether and why it stalled.

Shared by the rollout_report module and the grader. Numbers come from the
DaemonSet's status and the Pods' own specs; the blocker comes from the
scheduler's message on the Pod that cannot be placed - nothing is assumed.
"""

import os
import re
import time

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.files import write_text
from ansible.module_utils.lab.wait import WaitTimeout, wait_until
from ansible.module_utils.kube.client import KubeError, client, condition


class RolloutError(LabError):
    """The DaemonSet cannot be read, or its rollout did not settle in time (``result``: what the
    last read showed)."""

    def __init__(self, message, **result):
        super().__init__(message)
        self.result = result


REPORT_KEYS = ["DESIRED", "UPDATED", "READY", "OLD_IMAGE_PODS", "MAX_UNAVAILABLE", "BLOCKER"]

# "this is not the Pod's node": 1.36 says "didn't satisfy plugin(s) [NodeAffinity]",
# older releases "didn't match Pod's node affinity/selector"
_AFFINITY = re.compile(r"node affinity/selector|\[NodeAffinity\]")
_KNOWN = [
    (_AFFINITY, "node-affinity-mismatch"),
    (re.compile(r"untolerated taint"), "untolerated-taint"),
    (re.compile(r"^Too many pods$"), "too-many-pods"),
    (re.compile(r"didn't have free ports"), "host-port-conflict"),
    (re.compile(r"unschedulable"), "node-unschedulable"),
]


def blocker_from_message(message):
    """'0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's
    node affinity/selector. preemption: ...' -> 'insufficient-memory'.

    Reasons that only say "not this Pod's node" (a DaemonSet Pod is pinned to one
    node) are dropped when another reason is present."""
    if not message:
        return None
    head = message.split(" preemption:")[0].strip().rstrip(".")
    if ":" in head:
        head = head.split(":", 1)[1]
    reasons = []
    for part in re.split(r"[,.]\s+", head):
        part = re.sub(r"^\d+\s+", "", part.strip()).strip().rstrip(".")
        if part:
            reasons.append(part)
    if not reasons:
        return None
    reasons = [r for r in reasons if not r.startswith("no new claims to deallocate")] or reasons
    meaningful = [r for r in reasons if not _AFFINITY.search(r)] or reasons
    slugs = []
    for reason in meaningful:
        match = re.match(r"Insufficient (.+)$", reason)
        if match:
            slug = "insufficient-" + re.sub(r"[^a-z0-9./]+", "-", match.group(1).lower())
        else:
            slug = next((name for pattern, name in _KNOWN if pattern.search(reason)), None)
            slug = slug or re.sub(r"[^a-z0-9]+", "-", reason.lower()).strip("-")
        if slug not in slugs:
            slugs.append(slug)
    return ",".join(slugs)


def snapshot(kube, namespace, name, with_pods=True):
    """Everything the judgment reads, in plain dicts (kube: lab_kube.Kube). Without Pods
    (with_pods=False: the DaemonSet's status alone, one small read) "pods" is None."""
    base = "/apis/apps/v1/namespaces/%s/daemonsets/%s" % (namespace, name)
    ds = kube.get(base)
    spec, meta, status = ds.get("spec") or {}, ds["metadata"], ds.get("status") or {}
    labels = (spec.get("selector") or {}).get("matchLabels") or {}
    selector = ",".join("%s=%s" % kv for kv in sorted(labels.items()))
    pods = kube.items("/api/v1/namespaces/%s/pods" % namespace,
                      labelSelector=selector) if with_pods else None
    # a Pod being deleted (deletionTimestamp set) is on its way out: on a real node it stays
    # listed while its container stops, and counting it would see one old Pod too many
    owned = [p for p in pods or [] if any(ref.get("uid") == meta["uid"]
                                          for ref in p["metadata"].get("ownerReferences") or [])]
    pods = [p for p in owned if not p["metadata"].get("deletionTimestamp")]
    images = sorted(c["image"] for c in spec["template"]["spec"]["containers"])
    rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate")
    max_unavailable = rolling.get("maxUnavailable") if rolling is not None else None
    max_surge = (rolling or {}).get("maxSurge", 0)
    pod_rows = []
    for pod in pods:
        scheduled = condition(pod, "PodScheduled")
        ready = condition(pod, "Ready")
        pod_rows.append({
            "name": pod["metadata"]["name"],
            "node": (pod.get("spec") or {}).get("nodeName"),
            "images": sorted(c["image"] for c in pod["spec"]["containers"]),
            "phase": (pod.get("status") or {}).get("phase"),
            "ready": ready.get("status") == "True",
            "ready_since": ready.get("lastTransitionTime") if ready.get("status") == "True" else None,
            "unschedulable": (scheduled.get("status") == "False"
                              and scheduled.get("reason") == "Unschedulable"),
            "scheduler_message": scheduled.get("message") if scheduled.get("status") == "False" else None,
            "created": pod["metadata"].get("creationTimestamp"),
            "revision": (pod["metadata"].get("labels") or {}).get("controller-revision-hash"),
        })
    return {
        "generation": meta.get("generation"),
        "observed_generation": status.get("observedGeneration"),
        "desired": status.get("desiredNumberScheduled", 0),
        "current": status.get("currentNumberScheduled", 0),
        "updated": status.get("updatedNumberScheduled") or 0,
        "ready": status.get("numberReady", 0),
        "available": status.get("numberAvailable") or 0,
        "unavailable": status.get("numberUnavailable") or 0,
        "max_unavailable": max_unavailable,
        "max_surge": max_surge,
        "min_ready_seconds": spec.get("minReadySeconds") or 0,
        "terminating": len(owned) - len(pods),
        "template_images": images,
        "template_containers": spec["template"]["spec"]["containers"],
        "selector": selector,
        "pods": pod_rows if with_pods else None,
    }


def judge(snap):
    """The report values and the verdict of one snapshot."""
    old = [p for p in snap["pods"] if p["images"] != snap["template_images"]]
    new = [p for p in snap["pods"] if p["images"] == snap["template_images"]]
    blocked = [p for p in new if p["unschedulable"]]
    messages = [p["scheduler_message"] for p in blocked if p["scheduler_message"]]
    blocker = blocker_from_message(messages[0]) if messages else None
    complete = status_complete(snap) and not old
    return {
        "desired": snap["desired"],
        "updated": snap["updated"],
        "ready": snap["ready"],
        "old_image_pods": len(old),
        "max_unavailable": snap["max_unavailable"],
        "blocker": blocker or ("none" if complete else "unknown"),
        "blocker_message": messages[0] if messages else None,
        "blocked_pods": [p["name"] for p in blocked],
        "complete": complete,
        "stalled": bool(blocked) and snap["observed_generation"] == snap["generation"],
    }


def _moving_parts(snap):
    return (snap["observed_generation"], snap["desired"], snap["current"], snap["updated"],
            snap["ready"], snap["available"], snap["unavailable"],
            tuple(sorted((p["name"], p["phase"], p["ready"], p["unschedulable"]) for p in snap["pods"])))


def status_complete(snap):
    """What the DaemonSet's own status says: every Pod updated and Ready, spec observed.
    judge() cannot call a rollout complete unless this holds, whatever the Pods show."""
    return (snap["observed_generation"] == snap["generation"]
            and snap["updated"] == snap["desired"] and snap["ready"] == snap["desired"])


def scaled(value, total):
    """An int-or-percent of a rolling update, as the controller scales it
    (intstrutil.GetScaledValueFromIntOrPercent with roundUp): "10%" of 25 -> 3."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%") and text[:-1].isdigit():
        return -(-int(text[:-1]) * total // 100)
    return int(text) if text.isdigit() else 0


def stall_is_final(snap):
    """True when the DaemonSet controller will delete and create nothing more, by its own rule
    (pkg/controller/daemon/update.go, rollingUpdate without surge, Kubernetes 1.36): every
    desired node has its one Pod, no Pod is terminating, no old Pod is unavailable (those it
    replaces at once), and the new Pods the scheduler refused (Unschedulable: they stay
    unavailable) already number maxUnavailable (scaled from desired, rounded up; 1 when surge
    and unavailability are both 0), so no old Pod may be deleted. The status must also agree
    with the Pods listed, since the report's numbers come from it. With surge, minReadySeconds
    or anything else the rule does not decide, False: the caller settles instead."""
    if snap["observed_generation"] != snap["generation"] or snap["terminating"]:
        return False
    desired = snap["desired"]
    surge = scaled(snap["max_surge"], desired)
    unavailable = scaled(snap["max_unavailable"], desired)
    if surge or snap["min_ready_seconds"] or snap["max_unavailable"] is None:
        return False
    unavailable = unavailable or 1
    pods = snap["pods"]
    new = [p for p in pods if p["images"] == snap["template_images"]]
    old = [p for p in pods if p["images"] != snap["template_images"]]
    refused = [p for p in new if p["unschedulable"]]
    return (len(pods) == desired and snap["current"] == desired and all(p["ready"] for p in old)
            and bool(refused) and len(refused) >= unavailable
            and snap["updated"] == len(new) and snap["ready"] == sum(1 for p in pods if p["ready"]))


def wait_settled(read, timeout, interval=1.0, settle=3, clock=time.monotonic, pause=time.sleep,
                 until_complete=False, peek=None, node_count=None):
    """Poll read() until the rollout is complete, or stalled. A stall ends the wait at once
    when stall_is_final() says the controller can do nothing more, else once its status has
    been unchanged for `settle` consecutive reads. With until_complete only a complete
    rollout ends the wait: at once when its desired count is every node of the cluster
    (node_count(), when given: the controller cannot be about to count a node it has not
    seen - fresh nodes carry the node lifecycle controller's not-ready:NoSchedule taint,
    which DaemonSet Pods do not tolerate, so desired grows as those taints go), else once it
    has been complete and unchanged for `settle` reads. peek() (the DaemonSet without its
    Pods), when given, is read first and the Pods are listed only once its status says
    complete - listing thousands of Pods every second was the API server's largest load
    while a fleet's DaemonSet was rolling out. Returns (snapshot, verdict, waited_seconds,
    reason)."""
    if timeout <= 0:  # one read: say what it shows
        snap = read()
        verdict = judge(snap)
        state = "complete" if verdict["complete"] else "stalled" if verdict["stalled"] else "in-progress"
        return snap, verdict, 0.0, state
    moving = {"previous": None, "same": 0}

    def look(_left):
        if until_complete and peek is not None and not status_complete(peek()):
            moving.update(previous=None, same=0)
            return False, None
        snap = read()
        verdict = judge(snap)
        parts = _moving_parts(snap)
        moving["same"] = moving["same"] + 1 if parts == moving["previous"] else 0
        moving["previous"] = parts
        same = moving["same"]
        # until_complete (before pushing an update): complete and unchanged for `settle`
        # reads, so the controller is not still catching up with what it just did
        if verdict["complete"] and (not until_complete or same >= settle - 1
                                    or (node_count is not None and snap["desired"] == node_count())):
            return True, (snap, verdict, "complete")
        if verdict["stalled"] and not until_complete and (same >= settle - 1 or stall_is_final(snap)):
            return True, (snap, verdict, "stalled")
        return False, (snap, verdict)

    try:
        (snap, verdict, state), waited = wait_until(
            "the rollout to %s" % ("complete" if until_complete else "complete or stall"), look,
            timeout, interval=interval, clock=clock, pause=pause)
    except WaitTimeout as exc:
        if exc.last is None:  # timed out while peeking: one full read says where it stands
            snap = read()
            return snap, judge(snap), exc.waited, "timeout"
        return exc.last[0], exc.last[1], exc.waited, "timeout"
    return snap, verdict, waited, state


def count_nodes(kube):
    """The cluster's Nodes, counted from one item and the API server's remainingItemCount
    (a full list of thousands of Nodes takes seconds); listed when the count is not given."""
    page = kube.get("/api/v1/nodes", params={"limit": "1"})
    remaining = (page.get("metadata") or {}).get("remainingItemCount")
    if remaining is not None:
        return len(page.get("items") or []) + int(remaining)
    return len(kube.items("/api/v1/nodes"))


def rollout_report(verdict):
    values = dict(verdict)
    return "".join("%s=%s\n" % (key, values[key.lower()]) for key in REPORT_KEYS)


def report_rollout(module):
    """rollout_report: wait for the DaemonSet of module.params to settle (or complete), judge it,
    write the report to dest (a recorded observation: kept unless overwrite). The module's result.
    Raises RolloutError, LabFileError or KubeconfigError."""
    p = module.params
    kube = client(p["kubeconfig"], p["context"])

    def read():
        return snapshot(kube, p["namespace"], p["name"])

    def peek():
        return snapshot(kube, p["namespace"], p["name"], with_pods=False)

    def node_count():
        return count_nodes(kube)

    recorded = bool(p["dest"]) and os.path.exists(p["dest"]) and not p["overwrite"]
    timeout = 0 if recorded else p["wait_timeout"]
    try:
        snap, verdict, waited, state = wait_settled(read, timeout, settle=p["settle"],
                                                    until_complete=p["wait_for"] == "complete",
                                                    peek=peek, node_count=node_count)
    except KubeError as exc:
        raise RolloutError("cannot read DaemonSet %s/%s: %s" % (p["namespace"], p["name"], exc))
    result = dict(verdict, changed=False, outcome=state, waited=round(waited, 1),
                  report=rollout_report(verdict), pods=snap["pods"])
    if state == "timeout" and p["fail_on_timeout"]:
        raise RolloutError("DaemonSet %s/%s %s within %ss: desired %s, updated %s, ready %s, "
                           "old-image pods %s%s"
                           % (p["namespace"], p["name"],
                              "did not complete" if p["wait_for"] == "complete"
                              else "neither completed nor stalled",
                              p["wait_timeout"], verdict["desired"], verdict["updated"],
                              verdict["ready"], verdict["old_image_pods"],
                              "; scheduler: " + verdict["blocker_message"]
                              if verdict["blocker_message"] else ""),
                           **result)
    if p["dest"]:
        result.update(write_text(module, p["dest"], result["report"], mode=p["mode"],
                                 backup=p["backup"], force=p["overwrite"], raise_errors=True))
    result["msg"] = "%s after %ss: %s; scheduler: %s" % (
        state, result["waited"], result["report"].strip().replace("\n", ", "),
        verdict["blocker_message"] or "-")
    return result
