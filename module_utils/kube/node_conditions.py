# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Node's conditions, read from the Node object (no SSH): the sentinel's RuntimeRestartPending
and RuntimeBreaksOnRestart (issue 39) or any other type; optionally wait until they have the
wanted statuses (lab/wait.py), and the gate's verdict - what `node_conditions` does, without
Ansible. Refusals are NodeConditionsError or KubeconfigError - both LabError.
"""

import time

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


def _post(kube, posts, check_mode):
    """Write each {name, type, status, reason, message} on its Node's status (a strategic merge
    by type keeps the others) where the Node shows another status, reason or message. The
    names written (or, in check mode, that would be)."""
    written = []
    for index, item in enumerate(posts or []):
        lacks = [k for k in ("name", "type", "status") if not item.get(k)]
        if lacks or item.get("status") not in ("True", "False", "Unknown"):
            raise NodeConditionsError("post[%d] (%s): needs name, type and status (True, False or Unknown); %s" % (
                index, item, "missing " + ", ".join(lacks) if lacks else "status is %r" % item.get("status")))
        path = "/api/v1/nodes/%s" % item["name"]
        try:
            node = kube.get(path, missing_ok=True)
        except KubeError as exc:
            raise NodeConditionsError("cannot read Node %s: %s" % (item["name"], exc))
        if node is None:
            raise NodeConditionsError("post: Node %s does not exist; name nodes of this cluster" % item["name"])
        now = condition(node, item["type"])
        if all(now.get(k) == item.get(k) for k in ("status", "reason", "message")):
            continue
        written.append(item["name"])
        if check_mode:
            continue
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        cond = {"type": item["type"], "status": item["status"], "reason": item.get("reason") or "",
                "message": item.get("message") or "", "lastHeartbeatTime": stamp,
                "lastTransitionTime": now.get("lastTransitionTime") if now.get("status") == item["status"] else stamp}
        try:
            kube.patch(path + "/status", {"status": {"conditions": [cond]}})
        except KubeError as exc:
            raise NodeConditionsError("cannot post %s on Node %s: %s" % (item["type"], item["name"], exc))
    return written


def fleet(kube, types, label_selector=None):
    """Every Node (page by page) with its conditions of `types`: rows sorted - those whose next
    restart breaks first, then those with a restart pending, then the rest by name."""
    try:
        nodes = kube.items("/api/v1/nodes", labelSelector=label_selector)
    except KubeError as exc:
        raise NodeConditionsError("cannot list Nodes: %s" % exc)
    rows = [dict(name=n["metadata"]["name"], conditions=pick(n, types)) for n in nodes]

    def order(row):
        c = row["conditions"]
        return (c.get("RuntimeBreaksOnRestart", {}).get("status") != "True",
                c.get("RuntimeRestartPending", {}).get("status") != "True", row["name"])
    return sorted(rows, key=order)


def table(rows, limit=50):
    """Which nodes break at their next reboot: a count line and a Markdown table of the nodes
    whose RuntimeBreaksOnRestart or RuntimeRestartPending is not False (at most `limit` rows,
    the rest counted)."""
    def status(row, kind):
        return row["conditions"].get(kind, {}).get("status", "Absent")
    breaks = [r for r in rows if status(r, "RuntimeBreaksOnRestart") == "True"]
    pending = [r for r in rows if status(r, "RuntimeRestartPending") == "True"]
    unwatched = [r for r in rows if status(r, "RuntimeBreaksOnRestart") == "Absent"]
    unknown = [r for r in rows if "Unknown" in (status(r, "RuntimeBreaksOnRestart"), status(r, "RuntimeRestartPending"))]
    lines = ["%d of %d nodes break at their next reboot (RuntimeBreaksOnRestart=True); %d have a restart "
             "pending; %d Unknown; %d carry no sentinel condition" % (
                 len(breaks), len(rows), len(pending), len(unknown), len(unwatched))]
    shown = [r for r in rows if status(r, "RuntimeBreaksOnRestart") not in ("False", "Absent")
             or status(r, "RuntimeRestartPending") not in ("False", "Absent")]
    if shown:
        lines += ["", "| node | RuntimeBreaksOnRestart | RuntimeRestartPending | message |", "|---|---|---|---|"]
        for row in shown[:limit]:
            c = row["conditions"]
            said = c.get("RuntimeBreaksOnRestart", {}).get("message") if status(row, "RuntimeBreaksOnRestart") == "True" \
                else c.get("RuntimeRestartPending", {}).get("message")
            cells = (row["name"], status(row, "RuntimeBreaksOnRestart"), status(row, "RuntimeRestartPending"),
                     (said or "").replace("|", "\\|"))
            lines.append("| %s | %s | %s | %s |" % cells)
        if len(shown) > limit:
            lines.append("| ... %d more |  |  |  |" % (len(shown) - limit))
    return "\n".join(lines) + "\n"


def run(params, check_mode=False):
    """The node_conditions module's result from its params: `post` written first; one Node
    (name: its conditions, the wait, refuse_on - the gate) or, without a name, every Node (the
    fleet's table)."""
    written = []
    if params.get("post"):
        written = _post(client(params["kubeconfig"], params.get("context")), params["post"], check_mode)
    if not params.get("name"):
        rows = fleet(client(params["kubeconfig"], params.get("context")), params["types"],
                     params.get("label_selector"))
        text = table(rows)
        return dict(changed=bool(written), posted=written, nodes=rows, table=text, msg=text.splitlines()[0])
    picked, waited = node_conditions(params["kubeconfig"], params["name"], params["types"],
                                     params.get("wait_for"), params.get("wait_timeout") or 0,
                                     params.get("context"))
    hits = refused(picked, params.get("refuse_on"))
    result = dict(changed=bool(written), posted=written, conditions=picked, waited=round(waited, 1),
                  refused=hits, msg="Node %s: %s" % (params["name"], describe(picked)))
    return result
