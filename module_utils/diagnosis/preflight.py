# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Before any experiment: which layers of the GPU path can this machine verify?

Each requirement (an executable, a reachable cluster, a socket or a path) serves layers of
LAYERS; a layer whose requirement is absent is ``skipped`` - never reported as verified. The
record (experiment id, track, kind, time, host, requirements, layers, status, reason) is
evidence: a rerun with the same id keeps the first one.
"""

import datetime
import glob
import json
import os
import platform
import re
import socket

from ansible.module_utils.diagnosis.verdict import LAYERS
from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.files import write_text
from ansible.module_utils.kube.client import client
from ansible.module_utils.node.commands import which

DEFAULT_REQUIREMENTS = [
    {"name": "kubectl", "kind": "executable", "layers": ["node-advertisement", "scheduling", "workload"]},
    {"name": "nvidia-smi", "kind": "executable", "layers": ["driver"]},
    {"name": "containerd", "kind": "executable", "layers": ["container-runtime"]},
    {"name": "cluster", "kind": "cluster",
     "layers": ["device-plugin", "node-advertisement", "scheduling", "workload"]},
    {"name": "device-plugin-socket", "kind": "socket",
     "path": "/var/lib/kubelet/device-plugins/*.sock", "layers": ["device-plugin"]},
]
NODE_ONLY = {"nvidia-smi", "containerd", "device-plugin-socket"}


class PreflightError(LabError):
    """A requirement or record that cannot be used; the text says which and what to do."""


def check(req, kubeconfig, context):
    """(available | missing | unsupported, detail) of one requirement."""
    kind = req.get("kind", "executable")
    name = req["name"]
    system = platform.system()
    if kind in ("executable", "socket") and (name in NODE_ONLY or req.get("node_only")) \
            and system != "Linux":
        return "unsupported", "%s runs on Linux GPU nodes; this is %s %s" % (
            name, system, platform.machine())
    if kind == "executable":
        path = req.get("path") or which(name)
        if path and os.access(path, os.X_OK):
            return "available", path
        return "missing", "%s not found%s" % (name, " at " + req["path"] if req.get("path") else " on PATH")
    if kind in ("socket", "path"):
        found = [f for f in glob.glob(req.get("path") or "") if os.path.basename(f) != "kubelet.sock"]
        return ("available", ", ".join(found[:5])) if found else \
            ("missing", "nothing at %s" % req.get("path"))
    if kind == "cluster":
        config = req.get("path") or kubeconfig
        if not config:
            return "missing", "no kubeconfig given: no cluster context to verify against"
        try:
            kube = client(config, req.get("context") or context)
            version = kube.get("/version")
            return "available", "%s (%s)" % (kube.conf["server"], version.get("gitVersion"))
        except Exception as exc:  # an unreachable cluster is a finding, reported as missing
            return "missing", "cluster not reachable with %s: %s" % (config, str(exc).splitlines()[0][:200])
    raise PreflightError("requirement %s: kind must be executable, cluster, socket or path, got %r"
                         % (name, kind))


def record_path(p):
    """Where the record of p's experiment_id goes, or PreflightError for an unsafe id."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", p["experiment_id"] or ""):
        raise PreflightError("experiment_id %r must be letters, digits, '.', '_' or '-' (it names "
                             "the record file)" % p["experiment_id"])
    return os.path.join(p["dest"], p["experiment_id"] + ".json")


def kept_record(path):
    """The earlier record at path, or None when there is none."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise PreflightError("%s exists but is not a readable record (%s); move it away or "
                             "use another experiment_id" % (path, exc))


def layer_status(checked):
    """{layer: {status: skipped | verifiable | unchecked, missing: [names]}}."""
    layers = {}
    for layer in LAYERS:
        needs = [c for c in checked if layer in c["layers"]]
        absent = [c["name"] for c in needs if c["status"] != "available"]
        layers[layer] = {"status": "skipped" if absent else ("verifiable" if needs else "unchecked"),
                         "missing": absent}
    return layers


def overall(checked, layers):
    """(passed | skipped | failed, the reason)."""
    failed = [c["name"] for c in checked if c["required"] and c["status"] != "available"]
    absent = [c for c in checked if c["status"] != "available"]
    if failed:
        return "failed", "required and not available: %s" % ", ".join(failed)
    if absent:
        return "skipped", "cannot verify here: %s (%s); layers skipped: %s" % (
            ", ".join("%s %s" % (c["name"], c["status"]) for c in absent),
            "; ".join(c["detail"] for c in absent),
            ", ".join(l for l, v in layers.items() if v["status"] == "skipped"))
    return "passed", "every requirement is available"


def new_record(p):
    """The record of this machine for gpu_preflight's options `p`."""
    checked = []
    for index, req in enumerate(p["requirements"] or DEFAULT_REQUIREMENTS):
        if not req.get("name"):
            raise PreflightError("requirements[%d] has no name" % index)
        layers = req.get("layers") or []
        bad = [layer for layer in layers if layer not in LAYERS]
        if bad:
            raise PreflightError("requirements[%d] (%s): unknown layer(s) %s; layers: %s"
                                 % (index, req["name"], ", ".join(bad), ", ".join(LAYERS)))
        status, detail = check(req, p["kubeconfig"], p["context"])
        checked.append({"name": req["name"], "kind": req.get("kind", "executable"),
                        "layers": layers, "required": bool(req.get("required")),
                        "status": status, "detail": detail})
    layers = layer_status(checked)
    status, reason = overall(checked, layers)
    if p["reason"]:
        reason += ". " + p["reason"]
    return {
        "experiment_id": p["experiment_id"], "track": p["track"], "kind": p["kind"],
        "time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(), "platform": "%s %s" % (platform.system(), platform.machine()),
        "requirements": checked, "layers": layers, "status": status, "reason": reason,
    }


def summary(record):
    """The record as a few plain lines."""
    reqs = record.get("requirements") or []
    lines = ["preflight %s (%s, %s)" % (record.get("experiment_id"), record.get("host"),
                                        record.get("time")),
             "required: %d, available: %d" % (len(reqs), sum(r["status"] == "available" for r in reqs))]
    lines += ["%s: %s" % (r["name"], r["status"]) for r in reqs]
    lines.append("status: %s (%s)" % (record.get("status"), record.get("reason")))
    return "\n".join(lines) + "\n"


def preflight(module):
    """gpu_preflight's result: the kept record, or a new one (written unless in check mode)."""
    p = module.params
    path = record_path(p)
    record = kept_record(path)
    if record is not None:
        return dict(changed=False, kept_existing=True, record=record, path=path,
                    status=record.get("status"), summary=summary(record))
    record = new_record(p)
    result = write_text(module, path, json.dumps(record, indent=2, sort_keys=False) + "\n", force=False,
                        raise_errors=True)
    return dict(changed=result["changed"], kept_existing=False, record=record, path=path,
                status=record["status"], summary=summary(record), diff=result.get("diff"))
