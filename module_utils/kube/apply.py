# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Converge the manifests that manifest_compare.drift() found missing or different.

What kubernetes.core.k8s does with ``state: present`` (its default ``merge_type``:
strategic merge, then JSON merge for kinds that refuse it - custom resources), done here
with the lab's own client so that comparing and applying is one module run, not two (the
k8s module imports the kubernetes Python client on every run: ~1 s per task on the lab's
machine, bench/lab-timings.sh): a missing object is created (POST to its collection), a
different one patched with the manifest itself. Objects go in the order given (a Namespace
before what lives in it). Nothing is deleted and a field the manifest does not name is left
as the cluster has it - an update pushed by hand is never reverted by a field the manifest
leaves out.
"""

import re
import time

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.wait import WaitTimeout, wait_until
from ansible.module_utils.kube.client import KubeError, client

MODES = ("none", "missing", "drift")
# kube-apiserver's ServiceAccount admission refuses a Pod until the namespace's ServiceAccount
# exists - and the controller-manager makes "default" only after the namespace: a Pod created
# right after its namespace meets this (kubectl users wait for it, as bench/bare-lab.sh does)
_NO_SERVICE_ACCOUNT = re.compile(r"error looking up service account ([^/\s]+)/([^:\s]+)")
SERVICE_ACCOUNT_TIMEOUT = 60


class ApplyError(LabError):
    """The API server refused to create or patch an object; the message names it and why."""


def _check(mode):
    if mode not in MODES:
        raise ApplyError("apply=%r: choose one of %s" % (mode, ", ".join(MODES)))


def _target(doc, objects):
    """drift()'s entry of this manifest: kind and name, and its namespace when it names one."""
    meta = doc["metadata"]
    wanted = (doc["apiVersion"], doc["kind"], meta["name"])
    for entry in objects:
        same = (entry["api_version"], entry["kind"], entry["name"]) == wanted
        if same and meta.get("namespace") in (None, entry["namespace"]):
            return entry
    raise ApplyError("%s %s is not among the compared objects" % (doc["kind"], meta["name"]))


def apply(kube, found, mode, check_mode=False):
    """Create what is missing (mode missing or drift) and patch what differs (mode drift).

    `found` is drift()'s result. Returns the list of {api_version, kind, name, namespace,
    action} entries (action: created or patched; in check mode what would be done)."""
    _check(mode)
    if mode == "none":
        return []
    todo = [(doc, "created") for doc in found["missing"]]
    if mode == "drift":
        todo = [(doc, "created" if any(doc is m for m in found["missing"]) else "patched")
                for doc in found["to_apply"]]
    done = []
    for doc, action in todo:
        entry = _target(doc, found["objects"])
        step = dict((k, entry[k]) for k in ("api_version", "kind", "name", "namespace"))
        step["action"] = action
        done.append(step)
        if check_mode:
            continue
        body = dict(doc)
        if entry["namespace"]:
            body["metadata"] = dict(doc["metadata"], namespace=entry["namespace"])
        try:
            if action == "created":
                _create(kube, kube.path(doc["apiVersion"], doc["kind"], None, entry["namespace"]), body)
            else:
                path = kube.path(doc["apiVersion"], doc["kind"], entry["name"], entry["namespace"])
                try:
                    kube.patch(path, body, kind="strategic")
                except KubeError as exc:
                    if exc.status != 415:   # custom resources take no strategic merge patch
                        raise
                    kube.patch(path, body, kind="merge")
        except KubeError as exc:
            where = " in namespace %s" % entry["namespace"] if entry["namespace"] else ""
            raise ApplyError("cannot %s %s %s%s: %s" % ("create" if action == "created" else "patch",
                                                        doc["kind"], entry["name"], where, exc))
    return done


def _create(kube, path, body, timeout=SERVICE_ACCOUNT_TIMEOUT, clock=time.monotonic, pause=time.sleep):
    """POST body; refused for a ServiceAccount not made yet, wait for it (bounded) and post again."""
    try:
        return kube.create(path, body)
    except KubeError as exc:
        match = _NO_SERVICE_ACCOUNT.search(str(exc)) if exc.status == 403 else None
        if not match:
            raise
    namespace, name = match.groups()
    account = "/api/v1/namespaces/%s/serviceaccounts/%s" % (namespace, name)

    def look(_left):
        found = kube.get(account, missing_ok=True)
        return found is not None, "not there" if found is None else "there"

    try:
        wait_until("ServiceAccount %s/%s" % (namespace, name), look, timeout, interval=0.1,
                   clock=clock, pause=pause)
    except WaitTimeout:
        raise KubeError(403, "Forbidden", "ServiceAccount %s/%s did not appear within %ds (the "
                        "controller-manager makes it for a new namespace; is it running?)"
                        % (namespace, name, timeout))
    return kube.create(path, body)


def converge(kubeconfig, context, found, mode, check_mode=False):
    """apply() with a client of its own, made only when there is something to apply."""
    _check(mode)
    pending = {"none": [], "missing": found["missing"], "drift": found["to_apply"]}[mode]
    if not pending:
        return []
    return apply(client(kubeconfig, context), found, mode, check_mode)
