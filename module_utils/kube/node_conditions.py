# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Node's conditions, read from the Node object (no SSH): the sentinel's RuntimeRestartPending
and RuntimeBreaksOnRestart (issue 39) or any other type; optionally wait until they have the
wanted statuses (lab/wait.py), and the gate's verdict - what `node_conditions` does, without
Ansible. Refusals are NodeConditionsError or KubeconfigError - both LabError.
"""

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.wait import WaitTimeout, wait_until
from ansible.module_utils.kube.client import KubeError, client, condition

# The sentinel's two condition types (roles/runtime_sentinel, docs/real-node.md#sentinel)
SENTINEL_TYPES = ("RuntimeRestartPending", "RuntimeBreaksOnRestart")


class NodeConditionsError(LabError):
    """The Node cannot be read, or its conditions did not reach what was waited for in time."""


def pick(node, types):
    """{type: {status, reason, message, lastTransitionTime}} for each type; a type the Node does
    not carry has status "Absent" (the sentinel never ran there, or not yet)."""
    out = {}
    for kind in types:
        cond = condition(node or {}, kind)
        out[kind] = {"status": cond.get("status") or "Absent", "reason": cond.get("reason") or "",
                     "message": cond.get("message") or "",
                     "lastTransitionTime": cond.get("lastTransitionTime") or ""}
    return out


def describe(picked):
    if picked is None:
        return "the Node does not exist"
    return "; ".join("%s=%s%s" % (kind, c["status"], " (%s)" % c["message"] if c["message"] else "")
                     for kind, c in sorted(picked.items()))


def refused(picked, refuse_on):
    """The types among refuse_on ({type: status}) whose condition has that status."""
    return sorted(kind for kind, status in (refuse_on or {}).items()
                  if (picked or {}).get(kind, {}).get("status") == status)


def node_conditions(kubeconfig, name, types, wait_for=None, wait_timeout=0, context=None):
    """Read Node `name` until every type in wait_for ({type: status}) has that status (at most
    wait_timeout s, once a second; 0 = one read, no wait). Returns (picked, seconds waited).
    wait_for's types are read too. Raises NodeConditionsError naming the node and what it showed
    last."""
    wanted = dict(wait_for or {})
    types = list(dict.fromkeys(list(types or []) + sorted(wanted)))
    if not types:
        raise NodeConditionsError("name at least one condition type (types or wait_for), e.g. %s"
                                  % ", ".join(SENTINEL_TYPES))
    kube = client(kubeconfig, context)
    path = "/api/v1/nodes/%s" % name
    seen_node = {}

    def look(_left):
        try:
            node = kube.get(path, missing_ok=True)
        except KubeError as exc:
            raise NodeConditionsError("cannot read Node %s: %s" % (name, exc))
        seen_node["node"] = node
        if node is None:
            return False, None
        picked = pick(node, types)
        return all(picked[k]["status"] == v for k, v in wanted.items()), picked

    what = " and ".join("%s=%s" % kv for kv in sorted(wanted.items())) or "the Node"
    try:
        picked, waited = wait_until(what, look, wait_timeout if wanted else 0, interval=1,
                                    describe=describe)
    except WaitTimeout as exc:
        if seen_node.get("node") is None:
            raise NodeConditionsError("Node %s does not exist in the cluster of %s" % (name, kubeconfig))
        raise NodeConditionsError("Node %s: %s" % (name, exc.message))
    if picked is None:
        raise NodeConditionsError("Node %s does not exist in the cluster of %s" % (name, kubeconfig))
    return picked, waited


def run(params):
    """The node_conditions module's result from its params (refuse_on: the gate)."""
    picked, waited = node_conditions(params["kubeconfig"], params["name"], params["types"],
                                     params.get("wait_for"), params.get("wait_timeout") or 0,
                                     params.get("context"))
    hits = refused(picked, params.get("refuse_on"))
    result = dict(changed=False, conditions=picked, waited=round(waited, 1), refused=hits,
                  msg="Node %s: %s" % (params["name"], describe(picked)))
    return result
