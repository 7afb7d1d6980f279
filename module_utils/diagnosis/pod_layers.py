# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Pod's layers: scheduling and the workload.

Each rule takes the walk's :class:`~walk.Seen` (the node, the Pod, the error texts - all read
already) and returns a verdict.
"""

from ansible.module_utils.diagnosis import dra_layers
from ansible.module_utils.diagnosis.kube_objects import pod_request, scheduler_findings, tolerates
from ansible.module_utils.diagnosis.verdict import amount, ev, qty, verdict
from ansible.module_utils.kube.client import condition


def scheduling(seen):
    """Did the scheduler place the Pod - and if not, what does its message name?

    Without a Pod: judges the node itself (cordon, Ready condition, NoSchedule/NoExecute
    taints). With one: its PodScheduled condition and ``spec.nodeName``; for a Pod not
    scheduled, the scheduler's message (Insufficient, untolerated taints, affinity, cordon,
    RuntimeClass) with the node's own taints, cordon and allocatable against the request.
    Broken: the node is cordoned or not Ready (no Pod given); the Pod is not scheduled.
    Unknown: no PodScheduled condition yet, or a source without the node's conditions.
    """
    if seen.pod is None:
        return _judge_node_schedulable(seen)
    name, node, pod, where = seen.name, seen.node, seen.pod, seen.where
    ns, pname = pod["metadata"].get("namespace"), pod["metadata"]["name"]
    cond = condition(pod, "PodScheduled")
    source = "%s .status.conditions[PodScheduled]" % where.pod(ns, pname)
    bound = (pod.get("spec") or {}).get("nodeName")
    if bound:
        return verdict("scheduling", "ok", [ev(source, cond.get("status") or "True"),
                                            ev("Pod .spec.nodeName", bound)],
                       "scheduled to %s; go on to the workload" % bound)
    if not cond:
        return verdict("scheduling", "unknown", [ev(source, "<not set yet>")],
                       "the scheduler has not judged the Pod yet: wait for PodScheduled",
                       reason="no PodScheduled condition yet")
    message = cond.get("message") or ""
    evidence = [ev(source, "status=%s reason=%s" % (cond.get("status"), cond.get("reason"))),
                ev("PodScheduled.message", message)]
    findings = scheduler_findings(message, seen.resource) + _node_against_pod(seen)
    if getattr(seen, "dra", None) is not None:
        more, dra_findings = dra_layers.scheduling_findings(seen, message)
        evidence += more
        findings += dra_findings
    for finding in findings:
        evidence.append(ev("finding", finding))
    return verdict("scheduling", "broken", evidence,
                   "; ".join(findings) if findings else "read the scheduler's message above: "
                   "kubectl describe pod %s -n %s" % (pname, ns))


def _judge_node_schedulable(seen):
    """No Pod: does the node take new Pods (not cordoned, Ready; which taints it sets)?"""
    ref = seen.where.node(seen.name)
    spec = seen.node.get("spec") or {}
    taints = spec.get("taints") or []
    evidence = [ev("%s .spec.unschedulable" % ref, bool(spec.get("unschedulable"))),
                ev("%s .spec.taints" % ref,
                    ["%s=%s:%s" % (t.get("key"), t.get("value", ""), t.get("effect"))
                     for t in taints] or "none")]
    ready = condition(seen.node, "Ready").get("status")
    evidence.append(ev("%s Ready condition" % ref, ready or "<unset>"))
    if ready is None and seen.where.kind != "live":
        return verdict("scheduling", "unknown", evidence, "the node's conditions are not "
                       "in this source", reason="no Ready condition here")
    if spec.get("unschedulable") or ready != "True":
        return verdict("scheduling", "broken", evidence,
                       "the node is %s: nothing new is scheduled there"
                       % ("cordoned" if spec.get("unschedulable") else "not Ready"))
    hard = [t for t in taints if t.get("effect") in ("NoSchedule", "NoExecute")]
    if hard:
        return verdict("scheduling", "ok", evidence, "only Pods that tolerate %s land here"
                       % ", ".join(t.get("key", "") for t in hard))
    return verdict("scheduling", "ok", evidence, "the node takes Pods; give a Pod to check "
                   "its own scheduling")


def _node_against_pod(seen):
    """What the node itself holds against the unscheduled Pod: too few allocatable, taints it
    does not tolerate, a cordon."""
    name, node, pod = seen.name, seen.node, seen.pod
    spec = node.get("spec") or {}
    findings = []
    request = pod_request(pod, seen.resource)
    alloc = amount(((node.get("status") or {}).get("allocatable") or {}).get(seen.resource))
    if request and alloc is not None and request > alloc:
        findings.append("the Pod requests %s %s; %s advertises %s" % (
            qty(request), seen.resource, name, qty(alloc)))
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    untolerated = [t for t in spec.get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")
                   and not any(tolerates(tol, t) for tol in tolerations)]
    if untolerated:
        findings.append("%s has taint(s) the Pod does not tolerate: %s" % (name, ", ".join(
            "%s=%s:%s" % (t.get("key"), t.get("value", ""), t.get("effect")) for t in untolerated)))
    if spec.get("unschedulable"):
        findings.append("%s is cordoned (spec.unschedulable)" % name)
    return findings


def workload(seen):
    """Does the Pod's own container run?

    Judges the Pod's phase, its container states (waiting, terminated with an exit code,
    restarts while not Ready) and the error texts found in its events, state messages and
    log - those caused at a lower layer are cited with that layer (judged there).
    Broken: phase Failed or a failing container. Ok: Running or Succeeded. Skipped: no Pod
    given, or not scheduled (no container ran). Unknown: any other phase (Pending on a node).
    """
    pod, texts, where = seen.pod, seen.texts, seen.where
    if pod is None:
        return verdict("workload", "skipped", [], "give a Pod to judge a workload",
                       reason="no Pod given")
    status = pod.get("status") or {}
    phase = status.get("phase")
    ns, pname = pod["metadata"].get("namespace"), pod["metadata"]["name"]
    source = where.pod(ns, pname)
    evidence = [ev(source + " .status.phase", phase)]
    if status.get("reason"):
        evidence.append(ev(source + " .status.reason", "%s: %s" % (
            status["reason"], status.get("message", ""))))
    if not (pod.get("spec") or {}).get("nodeName"):
        return verdict("workload", "skipped", evidence, "the Pod never reached a node",
                       reason="not scheduled, so no container ran")
    bad = []
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        kind = next(iter(state), "unknown")
        detail = state.get(kind) or {}
        evidence.append(ev("containerStatuses[%s]" % cs.get("name"),
                           "%s%s ready=%s restarts=%s" % (
            kind, " (%s)" % detail.get("reason") if detail.get("reason") else "",
            cs.get("ready"), cs.get("restartCount", 0))))
        if kind == "waiting" or (kind == "terminated" and detail.get("exitCode")) or \
                cs.get("restartCount", 0) > 0 and not cs.get("ready"):
            bad.append("%s: %s%s" % (cs.get("name"), kind,
                                     " (%s)" % detail.get("reason") if detail.get("reason") else ""))
    caused = [t for t in texts if "the Pod" in t["source"] and t["layer"] != "workload"]
    for t in caused:
        evidence.append(ev(t["source"], "%s -> caused at the %s layer" % (t["line"][:240],
                                                                          t["layer"])))
    said = (getattr(seen, "last_errors", None) or {}).get((ns, pname)) or []
    if phase == "Failed" or bad:
        where = " - caused at the %s layer (see there)" % caused[0]["layer"] if caused else ""
        return verdict("workload", "broken", evidence + said,
                       "the container itself fails (%s)%s%s: kubectl logs %s -n %s --previous; "
                       "a 'no CUDA-capable device' inside means the GPU was not handed in" % (
                           "; ".join(bad) or phase, where,
                           "; it said last: %s" % said[0]["value"][:200] if said else "",
                           pname, ns))
    if phase in ("Running", "Succeeded"):
        return verdict("workload", "ok", evidence, "the workload runs; look at its own logs "
                       "and metrics for anything further")
    return verdict("workload", "unknown", evidence, "the Pod is %s: watch it" % phase,
                   reason="phase %s" % phase)
