#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: record what this machine can verify of the GPU path, before anything runs."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_preflight
short_description: Record which layers of the GPU path this machine can verify (passed, failed or skipped)
description:
  - Before any experiment, checks what the machine it runs on can verify - the executables and
    contexts each layer needs (C(nvidia-smi) for the driver, C(containerd) for the container
    runtime, the device-plugin socket, a reachable cluster and C(kubectl) for the rest) - and
    records each as C(available), C(missing) or C(unsupported) (cannot exist on this platform).
  - The overall status is C(passed) (everything available), C(skipped) (some layers cannot be
    verified here - named in the reason; never reported as passed) or C(failed) (a requirement
    marked C(required) is not available).
  - The record is JSON - experiment id, track, kind, time, host, requirements with status,
    layers, overall status and reason - written to O(dest)/<experiment_id>.json. A rerun with
    the same id keeps the first record (it is evidence) and returns it.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
options:
  experiment_id:
    description: The experiment's id; names the record.
    type: str
    required: true
  track:
    description: The track the experiment belongs to.
    type: str
    default: kubernetes
  kind:
    description: The kind of record.
    type: str
    default: kubernetes-gpu-preflight
  dest:
    description: Folder for the records.
    type: path
    required: true
  reason:
    description: Your note on the run (what was and was not accessed); added to the reason.
    type: str
  kubeconfig:
    description: kubeconfig of the cluster to check for reachability; without it the cluster requirement is C(missing).
    type: path
  context:
    description: Context in the kubeconfig.
    type: str
  requirements:
    description:
      - What to check, each C(name), C(kind) (C(executable), C(cluster), C(socket) or C(path)),
        C(layers) it serves, optional C(path) (a file, a glob for sockets, or the executable's
        path when it is not on PATH) and C(required) (its absence fails the preflight).
      - Default - C(kubectl), C(nvidia-smi), C(containerd), the cluster, and the device-plugin
        socket C(/var/lib/kubelet/device-plugins/*.sock).
    type: list
    elements: dict
attributes:
  check_mode:
    description: Can run in check mode and report what would change without changing it.
    support: full
    details: Checks everything and reports the record it would write, without writing it.
  diff_mode:
    description: Returns details on what changed (or would change in check mode) with --diff.
    support: none
"""

EXAMPLES = r"""
- name: What can this machine verify?
  gpu_preflight:
    experiment_id: kubernetes-day02-preflight-20260916-001
    dest: ~/experiments/preflight
    kubeconfig: ~/.kube/config
    reason: No GPU Kubernetes context was accessed; no workload was executed.
  register: preflight
"""

RETURN = r"""
record:
  description: The record (as written, or as found when the id was already recorded).
  returned: success
  type: dict
status:
  description: passed, failed or skipped.
  returned: success
  type: str
path:
  description: The record's file.
  returned: success
  type: str
kept_existing:
  description: True when a record with this id existed and was kept.
  returned: success
  type: bool
summary:
  description: The record as a few plain lines.
  returned: success
  type: str
"""

import datetime  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import socket  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab_files import write_text  # noqa: E402
from ansible.module_utils.lab_kube import client  # noqa: E402

DEFAULT_REQUIREMENTS = [
    {"name": "kubectl", "kind": "executable", "layers": ["node-advertisement", "scheduling", "workload"]},
    {"name": "nvidia-smi", "kind": "executable", "layers": ["driver"]},
    {"name": "containerd", "kind": "executable", "layers": ["container-runtime"]},
    {"name": "cluster", "kind": "cluster",
     "layers": ["device-plugin", "node-advertisement", "scheduling", "workload"]},
    {"name": "device-plugin-socket", "kind": "socket",
     "path": "/var/lib/kubelet/device-plugins/*.sock", "layers": ["device-plugin"]},
]
LAYERS = ["driver", "container-runtime", "device-plugin", "node-advertisement", "scheduling",
          "workload"]
NODE_ONLY = {"nvidia-smi", "containerd", "device-plugin-socket"}


def _check(module, req, kubeconfig, context):
    kind = req.get("kind", "executable")
    name = req["name"]
    system = platform.system()
    if kind in ("executable", "socket") and (name in NODE_ONLY or req.get("node_only")) \
            and system != "Linux":
        return "unsupported", "%s runs on Linux GPU nodes; this is %s %s" % (
            name, system, platform.machine())
    if kind == "executable":
        path = req.get("path") or module.get_bin_path(name)
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
    module.fail_json(msg="requirement %s: kind must be executable, cluster, socket or path, got %r"
                     % (name, kind))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            experiment_id=dict(type="str", required=True),
            track=dict(type="str", default="kubernetes"),
            kind=dict(type="str", default="kubernetes-gpu-preflight"),
            dest=dict(type="path", required=True),
            reason=dict(type="str"),
            kubeconfig=dict(type="path"),
            context=dict(type="str"),
            requirements=dict(type="list", elements="dict"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", p["experiment_id"] or ""):
        module.fail_json(msg="experiment_id %r must be letters, digits, '.', '_' or '-' (it names "
                             "the record file)" % p["experiment_id"])
    path = os.path.join(p["dest"], p["experiment_id"] + ".json")
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as handle:
                record = json.load(handle)
        except (OSError, ValueError) as exc:
            module.fail_json(msg="%s exists but is not a readable record (%s); move it away or "
                                 "use another experiment_id" % (path, exc))
        module.exit_json(changed=False, kept_existing=True, record=record, path=path,
                         status=record.get("status"), summary=summary(record))
    requirements = p["requirements"] or DEFAULT_REQUIREMENTS
    checked = []
    for index, req in enumerate(requirements):
        if not req.get("name"):
            module.fail_json(msg="requirements[%d] has no name" % index)
        layers = req.get("layers") or []
        bad = [layer for layer in layers if layer not in LAYERS]
        if bad:
            module.fail_json(msg="requirements[%d] (%s): unknown layer(s) %s; layers: %s"
                             % (index, req["name"], ", ".join(bad), ", ".join(LAYERS)))
        status, detail = _check(module, req, p["kubeconfig"], p["context"])
        checked.append({"name": req["name"], "kind": req.get("kind", "executable"),
                        "layers": layers, "required": bool(req.get("required")),
                        "status": status, "detail": detail})
    layers = {}
    for layer in LAYERS:
        needs = [c for c in checked if layer in c["layers"]]
        absent = [c["name"] for c in needs if c["status"] != "available"]
        layers[layer] = {"status": "skipped" if absent else ("verifiable" if needs else "unchecked"),
                         "missing": absent}
    failed = [c["name"] for c in checked if c["required"] and c["status"] != "available"]
    absent = [c for c in checked if c["status"] != "available"]
    if failed:
        status = "failed"
        reason = "required and not available: %s" % ", ".join(failed)
    elif absent:
        status = "skipped"
        reason = "cannot verify here: %s (%s); layers skipped: %s" % (
            ", ".join("%s %s" % (c["name"], c["status"]) for c in absent),
            "; ".join(c["detail"] for c in absent),
            ", ".join(l for l, v in layers.items() if v["status"] == "skipped"))
    else:
        status = "passed"
        reason = "every requirement is available"
    if p["reason"]:
        reason += ". " + p["reason"]
    record = {
        "experiment_id": p["experiment_id"], "track": p["track"], "kind": p["kind"],
        "time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(), "platform": "%s %s" % (platform.system(), platform.machine()),
        "requirements": checked, "layers": layers, "status": status, "reason": reason,
    }
    result = write_text(module, path, json.dumps(record, indent=2, sort_keys=False) + "\n",
                        force=False)
    module.exit_json(changed=result["changed"], kept_existing=False, record=record, path=path,
                     status=status, summary=summary(record), diff=result.get("diff"))


def summary(record):
    reqs = record.get("requirements") or []
    lines = ["preflight %s (%s, %s)" % (record.get("experiment_id"), record.get("host"),
                                        record.get("time")),
             "required: %d, available: %d" % (len(reqs), sum(r["status"] == "available" for r in reqs))]
    lines += ["%s: %s" % (r["name"], r["status"]) for r in reqs]
    lines.append("status: %s (%s)" % (record.get("status"), record.get("reason")))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
