# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes sees the GPU: the device plugin and what the node advertises.

Each rule takes the walk's :class:`~walk.Seen` (the node, its facts, the plugin's Pods and
DaemonSets, the error texts - all read already) and returns a verdict.
"""

from ansible.module_utils.node.artefacts import APPLICATION_XIDS, xids
from ansible.module_utils.diagnosis.kube_objects import (
    SOCKET_DIR, mounts_socket_dir, node_admits, plugin_component, tolerates)
from ansible.module_utils.diagnosis.sources import parse_selector
from ansible.module_utils.diagnosis.verdict import amount, ev, qty, text_ev, verdict
from ansible.module_utils.kube.client import condition


def device_plugin(seen):
    """Does a device-plugin Pod run on the node and register with the kubelet?

    Judges the plugin's Pods on the node (read by the walk with any of the three labelings
    of PLUGIN_SELECTORS, or the given selector), told apart from the GPU feature discovery
    and MPS Pods the Helm chart labels alike; their phase, Ready condition and the hostPath
    mount of the kubelet's socket folder; the plugin's own error texts (Allocate failures).
    Cites the Pods, the socket facts (``nvidia-<resource>.sock``), the plugin's DaemonSets when
    no Pod runs here, and texts caused lower (at the driver or the runtime) as notes.
    Broken: no plugin Pod on the node; one not Running/Ready or without the socket mount; an
    error text of its own. Skipped: the source holds no Pods.
    """
    name, facts, texts, where = seen.name, seen.facts or {}, seen.texts, seen.where
    refs = [where.pods(s, seen.dp_namespace) for s in seen.selectors]
    source = "%s (spec.nodeName=%s)" % (" + ".join(refs), name)
    if seen.plugin_why is not None:
        return verdict("device-plugin", "skipped", [ev(source, "not readable: %s" % seen.plugin_why)],
                       "give the cluster's Pods (kubectl get pods -A -o json)",
                       reason=seen.plugin_why)
    evidence = []
    for p, what in seen.other_components:
        evidence.append(ev("note", "%s/%s matches %s but is %s, not the device plugin" % (
            p["metadata"].get("namespace"), p["metadata"]["name"], " | ".join(seen.selectors), what)))
    sockets = _plugin_sockets(facts)
    if not seen.plugin_pods:
        return _no_plugin_pod(seen, source, evidence, sockets)
    broken = _plugin_pod_problem(seen, evidence)
    fref = where.facts(name)
    if sockets is not None:
        evidence.append(ev("%s device_plugin_sockets (nvidia-<resource>.sock in %s)" % (
            fref, SOCKET_DIR), sockets or "none"))
    if sockets == [] and not broken:
        evidence.append(ev("note", "no nvidia-<resource>.sock on %s while a plugin Pod "
                           "runs there and mounts the folder; judged by the cluster - look "
                           "at the plugin's log" % name))
    lower = [t for t in texts if t["layer"] in ("driver", "container-runtime")
             and "device-plugin" in t["source"]]
    for t in lower:
        evidence.append(ev(t["source"], "%s -> caused at the %s layer" % (t["line"][:240],
                                                                          t["layer"])))
    mine = [t for t in texts if t["layer"] == "device-plugin"]
    refused = [t for t in mine if t["what"].startswith(MIG_REFUSED)]
    if refused:
        evidence += text_ev(refused)
        return verdict("device-plugin", "broken", evidence, _mig_refused(seen, refused[0]))
    if mine and not broken:
        evidence += text_ev(mine)
        broken = "%s: read the plugin's log on %s (kubectl logs) - %s" % (
            mine[0]["what"], name, mine[0]["line"][:200])
    elif mine:
        evidence += text_ev(mine)
    if broken:
        return verdict("device-plugin", "broken", evidence, broken)
    return verdict("device-plugin", "ok", evidence, "the plugin runs and mounts the kubelet's "
                   "socket folder; go on to what the node advertises")


# texts.TEXT_RULES' words for NVIDIA's plugin refusing a MIG layout under its strategy
MIG_REFUSED = "the plugin refuses the node's MIG layout"


def _mig_refused(seen, text):
    """What to do when the plugin refused the node's MIG layout (a crash loop): its own words,
    the strategy and layout the node's labels name (GFD's nvidia.com/mig.strategy, the MIG
    manager's nvidia.com/mig.config)."""
    labels = seen.labels
    return ("the device plugin on %s refuses the node's MIG layout (nvidia.com/mig.config=%s, "
            "nvidia.com/mig.strategy=%s) and exits before it registers - its log: \"%s\": the "
            "single strategy needs one MIG profile on every MIG GPU; run the plugin with "
            "MIG_STRATEGY=mixed or lay out one profile (ansible-playbook playbooks/mig.yml "
            "-e mig_config=all-1g.5gb)" % (
                seen.name, labels.get("nvidia.com/mig.config", "<unset>"),
                labels.get("nvidia.com/mig.strategy", "<unset>"), text["match"].group(0)[:240]))


def _plugin_sockets(facts):
    """The plugin sockets the node facts list (nvidia-<resource>.sock), ["<a socket>"] / [] from
    the older yes/no fact, or None when not read."""
    sockets = facts.get("device_plugin_sockets")
    if sockets is None and "device_plugin_socket" in facts:
        sockets = ["<a socket>"] if facts["device_plugin_socket"] else []
    return sockets


def _no_plugin_pod(seen, source, evidence, sockets):
    """Broken: no plugin Pod runs on the node - with what its DaemonSets say about the node and
    a socket left behind as a note."""
    name = seen.name
    evidence.insert(0, ev(source, "no device-plugin Pod on %s" % name))
    evidence += daemonset_evidence(seen)
    if sockets:
        evidence.append(ev("note", "%s says the plugin socket exists on %s (%s), but no "
                           "plugin Pod runs there: a stale socket file, judged by the "
                           "cluster" % (seen.where.facts(name), name, ", ".join(sockets))))
    return verdict("device-plugin", "broken", evidence,
                   "the device-plugin DaemonSet has no Pod on %s: check its nodeSelector/"
                   "affinity/tolerations against the node's labels and taints, and "
                   "`kubectl get ds -A -l %s`" % (name, seen.selectors[0]))


def _plugin_pod_problem(seen, evidence):
    """Each plugin Pod on the node as evidence (phase, Ready, the socket folder mounted, being
    deleted); what is wrong with the first one not Running/Ready or without the mount, else None.
    A Pod being deleted (a rollout, a drain) keeps phase Running while its containers stop: it is
    named as such, and a Pod that stays goes first."""
    problems, serving = [], False
    for plugin in seen.plugin_pods:
        ns, pname = plugin["metadata"].get("namespace"), plugin["metadata"]["name"]
        phase = (plugin.get("status") or {}).get("phase")
        ready = condition(plugin, "Ready").get("status")
        mounted = mounts_socket_dir(plugin)
        deleted = plugin["metadata"].get("deletionTimestamp")
        evidence.append(ev(seen.where.pod(ns, pname), "phase=%s Ready=%s mounts %s: %s%s" % (
            phase, ready or "<unset>", SOCKET_DIR, "yes" if mounted else "no",
            "; being deleted (deletionTimestamp %s)" % deleted if deleted else "")))
        said = (getattr(seen, "last_errors", None) or {}).get((ns, pname)) or []
        evidence += said
        if deleted and (phase != "Running" or ready != "True"):
            labels = plugin["metadata"].get("labels") or {}
            selector = ([s for s in seen.selectors if parse_selector(s)(labels)] or seen.selectors)[0]
            problems.append((1, "the device-plugin Pod %s/%s is being deleted (since %s: a rollout, "
                                "a drain or a delete) and no other plugin Pod serves %s yet: watch "
                                "for its successor (kubectl -n %s get pods -l %s -w), then diagnose "
                                "again" % (ns, pname, deleted, seen.name, ns, selector)))
        elif phase != "Running" or ready != "True":
            problems.append((0, "the device-plugin Pod %s/%s is %s (Ready=%s)%s: kubectl -n %s "
                                "describe pod %s and its logs" % (
                                    ns, pname, phase, ready,
                                    "; it said last: %s" % said[0]["value"][:200] if said else "",
                                    ns, pname)))
        elif not mounted:
            problems.append((0, "the device-plugin Pod %s/%s does not mount the hostPath %s: "
                                "it cannot register with the kubelet - add the volume and "
                                "volumeMount" % (ns, pname, SOCKET_DIR)))
        else:
            serving = serving or not deleted
    problems = [p for p in problems if not (serving and p[0])]
    return min(problems, key=lambda p: p[0])[1] if problems else None


def daemonset_evidence(seen):
    """What the plugin's DaemonSets say about this node: desired/ready, and whether their
    Pod template's nodeSelector and required affinity admit it (none when the source has no
    DaemonSets)."""
    out = []
    node = seen.node
    matchers = [parse_selector(s) for s in seen.selectors]
    for ds in seen.daemonsets or []:
        template = (ds.get("spec") or {}).get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not any(m(labels) for m in matchers) or plugin_component(template):
            continue
        status = ds.get("status") or {}
        admits = node_admits(template, node)
        taints = [t for t in (node.get("spec") or {}).get("taints") or []
                  if t.get("effect") in ("NoSchedule", "NoExecute") and not any(
                      tolerates(tol, t) for tol in (template.get("spec") or {}).get("tolerations") or [])]
        out.append(ev("%s [%s/%s]" % (seen.where.daemonsets, ds["metadata"].get("namespace"),
                                      ds["metadata"]["name"]),
                      "desired %s, ready %s; its nodeSelector/affinity %s %s%s" % (
                          status.get("desiredNumberScheduled", "?"), status.get("numberReady", "?"),
                          "admit" if admits else "exclude", node["metadata"]["name"],
                          "; untolerated taint(s) %s" % ", ".join(t.get("key", "") for t in taints)
                          if taints else "")))
    return out


def advertisement(seen):
    """Does the node advertise the resource, and are the GPUs healthy?

    Judges the node's ``capacity`` and ``allocatable`` of the resource, against nvidia-smi's
    GPU count (times ``nvidia.com/gpu.replicas`` under time-slicing; a note when capacity is
    lower) and the Pod's request. Cites the node status, the GPU count, the Xid lines and
    the plugin's unhealthy-device texts when allocatable is below capacity.
    Broken: the resource is not advertised (capacity or allocatable missing or 0); or GPUs
    marked unhealthy make the Pod's request exceed allocatable while capacity would fit it.
    Unknown: a must-gather without the node's status.
    """
    name, node, texts, where, request = seen.name, seen.node, seen.texts, seen.where, seen.request
    status = node.get("status") or {}
    labels = seen.labels
    ref = where.node(name)
    cap = (status.get("capacity") or {}).get(seen.resource)
    alloc = (status.get("allocatable") or {}).get(seen.resource)
    evidence = [ev("%s .status.capacity[%s]" % (ref, seen.resource), cap or "<missing>"),
                ev("%s .status.allocatable[%s]" % (ref, seen.resource), alloc or "<missing>")]
    if not status.get("capacity") and not status.get("allocatable") and \
            where.kind == "must-gather" and not cap:
        return verdict("node-advertisement", "unknown", evidence, "the must-gather's "
                       "gpu_nodes.descr lacks this node's status", reason="no node status here")
    facts = seen.facts or {}
    gpus = facts.get("gpus")
    mine = [t for t in texts if t["layer"] == "node-advertisement"]
    mig = _mig_change(seen, evidence)
    if mig and (not amount(cap) or not amount(alloc) or (request and request > amount(alloc))):
        return verdict("node-advertisement", "broken", evidence, mig)
    if not amount(cap) or not amount(alloc):
        return verdict("node-advertisement", "broken", evidence,
                       "the node does not advertise %s (capacity %s, allocatable %s): read the "
                       "kubelet log on %s for the plugin's registration (journalctl -u "
                       "kubelet | grep -i device)" % (seen.resource, cap or "missing",
                                                      alloc or "missing", name))
    if gpus is not None and seen.resource == "nvidia.com/gpu" and \
            labels.get("nvidia.com/mig.strategy", "none") != "mixed":
        replicas = amount(labels.get("nvidia.com/gpu.replicas")) or 1
        evidence.append(ev("%s gpus (nvidia-smi)" % where.facts(name), len(gpus)))
        if amount(cap) < len(gpus) * replicas:
            evidence.append(ev("note", "capacity %s is below nvidia-smi's %d GPU(s) x %s "
                               "replica(s): the plugin advertises fewer than the host sees"
                               % (cap, len(gpus), qty(replicas))))
    if amount(alloc) < amount(cap):
        unhealthy = amount(cap) - amount(alloc)
        evidence.append(ev("finding", "%s of %s %s not allocatable: the plugin marked them "
                           "unhealthy (an Xid) or they are reserved" % (
                               qty(unhealthy), cap, seen.resource)))
        for code, pci, line in xids(facts.get("kernel_xid")):
            if code not in APPLICATION_XIDS:
                evidence.append(ev("%s kernel_xid" % where.facts(name), line[:200]))
        evidence += text_ev(mine)
        if request and amount(alloc) < request <= amount(cap):
            return verdict("node-advertisement", "broken", evidence,
                           "the Pod needs %s %s; %s has %s but only %s are healthy - the "
                           "scheduler's 'Insufficient' is caused here: find the Xid in the "
                           "kernel log (dmesg | grep NVRM) and the plugin's log, then reset "
                           "or replace the GPU" % (qty(request), seen.resource, name, cap,
                                                   alloc))
    if request and request > amount(alloc):
        evidence.append(ev("note", "the Pod asks for %s, more than the %s allocatable - a "
                           "scheduling finding, the advertisement itself is right"
                           % (qty(request), alloc)))
    return verdict("node-advertisement", "ok", evidence,
                   "%s advertises %s %s; go on to the scheduler" % (name, alloc, seen.resource))


def _mig_change(seen, evidence):
    """A MIG layout change the node's labels say failed (k8s-mig-manager's protocol:
    nvidia.com/mig.config asked, nvidia.com/mig.config.state failed - nvidia-mig-parted could not
    apply it, e.g. a Pod held a MIG device): its labels and the MIG devices still advertised join
    the evidence; what to do, or None when no change failed."""
    labels, ref = seen.labels, seen.where.node(seen.name)
    state = labels.get("nvidia.com/mig.config.state")
    if state not in ("failed", "pending"):
        return None
    asked = labels.get("nvidia.com/mig.config", "<unset>")
    evidence.append(ev("%s .metadata.labels" % ref, "nvidia.com/mig.config=%s "
                       "nvidia.com/mig.config.state=%s" % (asked, state)))
    alloc = (seen.node.get("status") or {}).get("allocatable") or {}
    left = ["%s: %s" % (k, v) for k, v in sorted(alloc.items())
            if k.startswith("nvidia.com/mig-") and amount(v)]
    evidence.append(ev("%s .status.allocatable (MIG devices)" % ref, ", ".join(left) or "none"))
    if state == "pending":
        evidence.append(ev("note", "a MIG layout change to %s is under way (state pending): the "
                           "device plugin is paused until it ends" % asked))
        return None
    return ("nvidia-mig-parted could not apply the MIG layout nvidia.com/mig.config=%s asks for "
            "(nvidia.com/mig.config.state=failed): the GPUs keep their old layout, or part of it, "
            "and %s advertises %s instead of %s%s - a layout cannot change under a "
            "Pod holding a MIG device: find it (kubectl get pods -A --field-selector "
            "spec.nodeName=%s), drain the node, then ask for the layout again (ansible-playbook "
            "playbooks/mig.yml -e mig_config=%s)" % (asked, seen.name, ", ".join(left) or
                                                     "no MIG device", seen.resource,
                                                     " (the Pod's request)" if seen.pod else "",
                                                     seen.name, asked))
