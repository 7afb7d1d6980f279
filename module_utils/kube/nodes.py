# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Node's status as a device plugin (or a kubelet) sets it: amounts in capacity and
allocatable, nodes created from a template as a kubelet registers them, and the wait for Ready.

What the node_resources module does, without Ansible. Every refusal is a NodeStatusError (a
LabError) whose ``result`` holds what was done before it (created nodes, patched nodes); the
kubeconfig's own refusal stays a KubeconfigError.
"""

import copy
import re
import time

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.wait import WaitTimeout, wait_until
from ansible.module_utils.kube.client import KubeError, client, condition, parse_quantity


class NodeStatusError(LabError):
    """A refusal of node_resources; ``result`` - the module's result so far (may be empty)."""

    def __init__(self, message, **result):
        super().__init__(message)
        self.result = result


def is_extended(name):
    return "/" in name and not name.split("/")[0].endswith("kubernetes.io")


def same_amount(left, right):
    if left is None or right is None:
        return left == right
    try:
        return parse_quantity(left) == parse_quantity(right)
    except ValueError:
        return str(left) == str(right)


def validate(resources, state):
    """The amounts as the API server takes them (text), or a NodeStatusError naming the bad one."""
    clean = {}
    for name, amount in resources.items():
        if not re.match(r"^([A-Za-z0-9.-]+/)?[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$", name):
            raise NodeStatusError("resource name %r is not a valid Kubernetes resource name" % name)
        if state == "absent":
            clean[name] = amount
            continue
        text = str(amount).strip()
        if is_extended(name):
            if not re.fullmatch(r"[0-9]+", text):
                raise NodeStatusError("amount %r for extended resource %s is not a whole number; "
                                      "extended resources are counted in integers, e.g. \"4\""
                                      % (amount, name))
        else:
            try:
                parse_quantity(text)
            except ValueError:
                raise NodeStatusError("amount %r for %s is not a Kubernetes quantity (e.g. 8, "
                                      "500m, 32Gi)" % (amount, name))
        clean[name] = text
    return clean


def summary(node, resources):
    status = node.get("status") or {}
    return {"name": node["metadata"]["name"], "labels": node["metadata"].get("labels") or {},
            "capacity": {r: (status.get("capacity") or {}).get(r) for r in resources},
            "allocatable": {r: (status.get("allocatable") or {}).get(r) for r in resources}}


def node_body(template, name, resources, fields):
    """The Node to create: the template with the name, hostname label and amounts set."""
    body = copy.deepcopy(template)
    body["apiVersion"], body["kind"] = "v1", "Node"
    metadata = body.setdefault("metadata", {})
    metadata["name"] = name
    metadata.setdefault("labels", {})["kubernetes.io/hostname"] = name
    status = body.setdefault("status", {})
    for field in fields:
        status.setdefault(field, {}).update(resources)
    return body


def is_ready(node):
    return condition(node, "Ready").get("status") == "True"


def posts(resources, fields=("allocatable",)):
    """A node test: its status shows every amount of `resources` (what its kubelet posts)."""
    def test(node):
        status = node.get("status") or {}
        return all(same_amount((status.get(field) or {}).get(name), amount)
                   for field in fields for name, amount in resources.items())
    return test


def wait_ready(kube, names, existing, timeout, clock=time.monotonic, test=is_ready):
    """Wait until every node of `names` passes `test` (default: is Ready): one list, then a
    watch from its version (events only for what changes - a fleet of thousands is not listed
    again and again). Updates `existing`; returns (names still failing it, seconds waited)."""
    is_ready = test  # pylint: disable=redefined-outer-name
    state = {"pending": [n for n in names if not is_ready(existing.get(n) or {})], "version": None}
    if not state["pending"] or timeout <= 0:
        return state["pending"], 0.0

    def look(left):
        if state["version"] is None:  # (re)list: at the start, and when the watch's version is gone
            nodes, state["version"] = kube.listing("/api/v1/nodes")
            existing.update((node["metadata"]["name"], node) for node in nodes)
            state["pending"] = [n for n in state["pending"] if not is_ready(existing.get(n) or {})]
            return not state["pending"], state["pending"]
        waiting = set(state["pending"])
        stop = clock() + left
        events = kube.watch("/api/v1/nodes", state["version"], min(60, left))
        try:
            for kind, node in events:
                state["version"] = (node.get("metadata") or {}).get("resourceVersion") or state["version"]
                if kind in ("ADDED", "MODIFIED"):
                    name = node["metadata"]["name"]
                    existing[name] = node
                    if name in waiting and is_ready(node):
                        waiting.discard(name)
                if not waiting or clock() >= stop:
                    break
        except KubeError as exc:
            if exc.status != 410:
                raise
            state["version"] = None  # too old to watch from: list again
        finally:
            events.close()
        state["pending"] = [n for n in state["pending"] if n in waiting]
        return not state["pending"], state["pending"]

    try:
        pending, waited = wait_until("nodes %s" % ", ".join(state["pending"]), look, timeout,
                                     interval=0, clock=clock, pause=lambda _seconds: None)
    except WaitTimeout as exc:
        return exc.last, round(exc.waited, 1)
    return pending, round(waited, 1)


def check_template(template):
    """A template the API server would take as a Node, or a plain refusal naming the field."""
    if template is None:
        raise NodeStatusError("missing=create needs template: the Node each missing node is "
                              "made from (at least {metadata: {annotations: {kwok.x-k8s.io/node: "
                              "fake}}} for a kwok node)")
    if template.get("kind", "Node") != "Node" or template.get("apiVersion", "v1") != "v1":
        raise NodeStatusError("template is a %s %s; it must be a Node (apiVersion v1), or leave "
                              "kind and apiVersion out"
                              % (template.get("apiVersion"), template.get("kind")))
    for key in ("metadata", "spec", "status"):
        if not isinstance(template.get(key, {}), dict):
            raise NodeStatusError("template.%s is a %s; it must be a mapping"
                                  % (key, type(template[key]).__name__))
    metadata = template.get("metadata") or {}
    for key in ("labels", "annotations"):
        value = metadata.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise NodeStatusError("template.metadata.%s must map names to strings (quote numbers "
                                  "and booleans: \"true\")" % key)
    if "name" in metadata or "generateName" in metadata:
        raise NodeStatusError("template.metadata names no node: the module names each one from names")


def _check_params(params):
    """The validated amounts; every refusal of the parameters before the cluster is asked."""
    if not params["resources"]:
        raise NodeStatusError("resources is empty; name at least one resource")
    resources = validate(params["resources"], params["state"])
    if params["workers"] < 1:
        raise NodeStatusError("workers is %d; it must be 1 or more" % params["workers"])
    if params["missing"] == "create":
        check_template(params["template"])
        if params["state"] != "present":
            raise NodeStatusError("missing=create makes nodes with resources; it goes with "
                                  "state=present only")
    return resources


def _create(kube, params, missing, existing, resources):
    """Create the missing nodes from the template; the names created."""
    bodies = {name: node_body(params["template"], name, resources, params["fields"])
              for name in missing}
    done = kube.each(lambda k, name: k.create("/api/v1/nodes", bodies[name]), missing,
                     params["workers"])
    created, failed = [], []
    for name, answer, error in done:
        if error is None:
            existing[name] = answer
            created.append(name)
        elif error.status == 409:  # made meanwhile by someone else: it exists
            existing[name] = kube.get("/api/v1/nodes/" + name)
        else:
            failed.append("%s (%s)" % (name, error))
    if failed:
        raise NodeStatusError("cannot create %d of %d node(s): %s"
                              % (len(failed), len(missing), "; ".join(failed[:5])),
                              created=created, changed=bool(created))
    return created


def _changes(names, existing, resources, fields, state):
    """(report per node, status patch per node, diff lines before, diff lines after)."""
    report, patches, before_text, after_text = {}, {}, [], []
    for name in names:
        if name not in existing:
            continue
        status = existing[name].get("status") or {}
        patch, node_report = {}, {}
        for field in fields:
            current = dict(status.get(field) or {})
            for resource, amount in resources.items():
                want = None if state == "absent" else amount
                have = current.get(resource)
                if same_amount(have, want):
                    continue
                patch.setdefault(field, {})[resource] = want
                node_report.setdefault(field, {})[resource] = {"before": have, "after": want}
        report[name] = node_report
        if not patch:
            continue
        patches[name] = patch
        before_text.append("%s: %s" % (name, {f: {r: v["before"] for r, v in rs.items()}
                                              for f, rs in node_report.items()}))
        after_text.append("%s: %s" % (name, {f: {r: v["after"] for r, v in rs.items()}
                                             for f, rs in node_report.items()}))
    return report, patches, before_text, after_text


def _patch(kube, patches, existing, workers, created):
    """Patch each node's status; the answer is the node as stored (what it now advertises)."""
    changed_nodes = list(patches)
    done = kube.each(lambda k, name: k.patch("/api/v1/nodes/%s/status" % name,
                                             {"status": patches[name]}),
                     changed_nodes, workers)
    failed = []
    for name, answer, error in done:
        if error is None:
            existing[name] = answer
        else:
            failed.append("%s: %s" % (name, error))
    if failed:
        raise NodeStatusError("cannot patch status of node %s" % "; ".join(failed[:5]),
                              changed_nodes=[n for n in changed_nodes
                                             if not any(f.startswith(n + ":") for f in failed)],
                              created=created)
    # the answer is what the API server stored: it must show what was sent (an admission
    # plugin or webhook may change or drop a node's status)
    differ = []
    for name in changed_nodes:
        status = existing[name].get("status") or {}
        for field, amounts in patches[name].items():
            for resource, want in amounts.items():
                have = (status.get(field) or {}).get(resource)
                if not same_amount(have, want):
                    differ.append("%s %s %s=%s (sent %s)" % (name, field, resource, have, want))
    if differ:
        raise NodeStatusError("the API server stored other amounts than were sent: %s - an admission "
                              "plugin or webhook changes node status" % "; ".join(differ[:5]),
                              changed_nodes=changed_nodes, created=created)


def _wait_posted(kube, params, names, existing, resources, check_mode):
    """state=posted: write nothing; wait until the nodes' kubelets post the amounts (a device
    plugin's devices, counted by the kubelet) - bounded by wait_timeout, naming what each node
    posts instead when it ends. Check mode only looks."""
    test = posts(resources, params["fields"])
    result = dict(changed=False, changed_nodes=[], created=[], missing=[], not_ready=[], waited=0.0,
                  nodes={}, cluster_nodes=[summary(existing[n], resources) for n in sorted(existing)])
    if check_mode:
        result["not_posted"] = [n for n in names if not test(existing[n])]
        return result
    try:
        pending, waited = wait_ready(kube, names, existing, params["wait_timeout"], test=test)
    except KubeError as exc:
        raise NodeStatusError("cannot watch nodes: %s" % exc, **result)
    result["waited"] = waited
    result["cluster_nodes"] = [summary(existing[n], resources) for n in sorted(existing)]
    if pending:
        said = ["%s posts %s" % (n, ", ".join("%s=%s" % (r, (existing[n].get("status") or {}).get(
            params["fields"][0], {}).get(r, "none")) for r in resources)) for n in pending[:20]]
        raise NodeStatusError("waited %ss for the kubelet of %s to post %s (a device plugin's devices): %s"
                              % (params["wait_timeout"], ", ".join(pending[:20]),
                                 ", ".join("%s=%s" % kv for kv in resources.items()), "; ".join(said)),
                              not_posted=pending, **result)
    return result


def shape_nodes(params, check_mode=False, diff=False):
    """Set (or remove) the amounts of node_resources' parameters in the nodes' status.

    ``params``: the module's parameters (names, resources, fields, state, missing, template,
    workers, wait_ready, wait_timeout, kubeconfig, context). Returns the module's result.
    Raises NodeStatusError (with what was done so far in ``result``) or KubeconfigError."""
    resources = _check_params(params)
    creating = params["missing"] == "create"
    kube = client(params["kubeconfig"], params["context"])
    try:
        existing = {node["metadata"]["name"]: node for node in kube.items("/api/v1/nodes")}
    except KubeError as exc:
        raise NodeStatusError("cannot list nodes: %s" % exc)

    names = list(dict.fromkeys(params["names"]))
    missing = [name for name in names if name not in existing]
    if missing and params["missing"] == "fail":
        raise NodeStatusError("node(s) %s not found; the cluster has %d node(s)%s"
                              % (", ".join(missing), len(existing),
                                 (": " + ", ".join(sorted(existing)[:10])) if existing else ""))
    if params["state"] == "posted":
        return _wait_posted(kube, params, names, existing, resources, check_mode)
    created = []
    if creating and missing:
        if check_mode:
            created = list(missing)
        else:
            created = _create(kube, params, missing, existing, resources)
            missing = []

    report, patches, before_text, after_text = _changes(names, existing, resources,
                                                        params["fields"], params["state"])
    changed_nodes = list(patches)
    if patches and not check_mode:
        _patch(kube, patches, existing, params["workers"], created)

    result = dict(changed=bool(changed_nodes or created), changed_nodes=changed_nodes,
                  created=created, missing=missing if not creating else
                  (created if check_mode else []),
                  nodes={k: v for k, v in report.items() if v}, not_ready=[], waited=0.0)
    if params["wait_ready"] and not missing and not check_mode:
        try:
            pending, waited = wait_ready(kube, names, existing, params["wait_timeout"])
        except KubeError as exc:
            raise NodeStatusError("cannot watch nodes: %s" % exc, **result)
        result["waited"] = waited
        if pending:
            result["not_ready"] = pending
            raise NodeStatusError("%d of %d node(s) not Ready after %ss: %s"
                                  % (len(pending), len(names), params["wait_timeout"],
                                     ", ".join(pending[:20])), **result)
    result["cluster_nodes"] = [summary(existing[n], resources) for n in sorted(existing)]
    if diff and (changed_nodes or created):
        result["diff"] = {"before": "".join(line + "\n" for line in before_text),
                          "after": "".join("%s: created\n" % n for n in created)
                                   + "".join(line + "\n" for line in after_text)}
    return result
