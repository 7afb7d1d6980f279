# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compare manifests with the live objects: every field a manifest sets must hold the same
value in the live object (what the API server adds - defaults, status - is not compared).

What the manifest_drift module does, without Ansible; it only reads. Refusals are
DriftError or KubeconfigError (both LabError).
"""

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.kube.client import KubeError, client, parse_quantity


class DriftError(LabError):
    """A definition that is not a manifest, or a live object that cannot be read."""


def _scalar_same(want, have):
    if want == have:
        return True
    if isinstance(want, bool) or isinstance(have, bool):
        return False
    if isinstance(want, (str, int, float)) and isinstance(have, (str, int, float)):
        if str(want) == str(have):
            return True
        try:
            return parse_quantity(want) == parse_quantity(have)
        except ValueError:
            return False
    return False


def differences(want, have, path=""):
    """Paths where the manifest `want` is not matched by the live object `have`."""
    if isinstance(want, dict):
        if not want and not have:
            return []
        if not isinstance(have, dict):
            return [path or "."]
        found = []
        for key, value in want.items():
            found.extend(differences(value, have.get(key), "%s.%s" % (path, key) if path else key))
        return found
    if isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return [path]
        if any(isinstance(item, dict) for item in want):
            found = []
            for index, (item, live) in enumerate(zip(want, have)):
                found.extend(differences(item, live, "%s[%d]" % (path, index)))
            return found
        return [] if all(_scalar_same(a, b) for a, b in zip(want, have)) else [path]
    if want is None:
        return [] if have is None or have == {} or have == [] else [path]
    return [] if _scalar_same(want, have) else [path]


def drift(kubeconfig, context, definitions, namespace="default"):
    """Which of the manifests in `definitions` are missing from the cluster or differ from it
    (None documents skipped): the manifest_drift module's result."""
    docs = [d for d in definitions if d is not None]
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind") \
                or not (doc.get("metadata") or {}).get("name"):
            raise DriftError("definitions[%d] is not a manifest with apiVersion, kind and "
                             "metadata.name: %.200r" % (index, doc))
    kube = client(kubeconfig, context)
    objects, live_objects, missing, differing, to_apply = [], [], [], [], []
    for doc in docs:
        meta = doc["metadata"]
        entry = {"api_version": doc["apiVersion"], "kind": doc["kind"], "name": meta["name"]}
        try:
            _plural, namespaced = kube.resource(doc["apiVersion"], doc["kind"])
            space = (meta.get("namespace") or namespace) if namespaced else None
            live = kube.get(kube.path(doc["apiVersion"], doc["kind"], meta["name"], space),
                            missing_ok=True)
        except KubeError as exc:
            raise DriftError("cannot read %s %s: %s" % (doc["kind"], meta["name"], exc))
        entry["namespace"] = space
        if live is None:
            entry.update(state="missing", differences=[])
            missing.append(doc)
            to_apply.append(doc)
        else:
            found = differences({k: v for k, v in doc.items() if k not in ("apiVersion", "kind")},
                                live)
            entry.update(state="differs" if found else "same", differences=found[:20])
            if found:
                differing.append(doc)
                to_apply.append(doc)
        objects.append(entry)
        live_objects.append(live)
    return dict(changed=False, objects=objects, missing=missing, differing=differing,
                to_apply=to_apply, live=live_objects)
