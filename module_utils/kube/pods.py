# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Pod's phase and conditions: wait until they are what is wanted, say what the Pod showed,
record a condition's reason and message (the scheduler's own words) once.

What the pod_wait module does, without Ansible. Refusals are PodWaitError, LabFileError
(the record) or KubeconfigError - all LabError.
"""

import os

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.files import write_text
from ansible.module_utils.lab.wait import WaitTimeout, wait_until
from ansible.module_utils.kube.client import KubeError, client, condition


class PodWaitError(LabError):
    """The Pod cannot be read, or did not reach what was waited for in time."""


def describe(pod):
    if pod is None:
        return "the Pod does not exist"
    status = pod.get("status") or {}
    parts = ["phase %s" % status.get("phase")]
    for cond in status.get("conditions") or []:
        parts.append("%s=%s%s" % (cond.get("type"), cond.get("status"),
                                  " (%s: %s)" % (cond.get("reason"), cond.get("message"))
                                  if cond.get("reason") or cond.get("message") else ""))
    return "; ".join(parts)


def reached(pod, phase, cond):
    if pod is None:
        return False
    if phase and (pod.get("status") or {}).get("phase") != phase:
        return False
    if cond and condition(pod, cond["type"]).get("status") != cond["status"]:
        return False
    return True


def _wanted(p):
    return " and ".join(filter(None, [
        "phase %s" % p["phase"] if p["phase"] else None,
        "%s=%s" % (p["condition"]["type"], p["condition"]["status"]) if p["condition"] else None]))


def _record(module, p, result):
    """Write the condition's reason and message to p["record"] (kept when it exists)."""
    text = "%s\n%s\n" % (result["condition"].get("reason") or "",
                         result["condition"].get("message") or "")
    result.update(write_text(module, p["record"], text, mode=p["mode"], backup=True,
                             force=p["overwrite"], parents=True, raise_errors=True))
    result.pop("dest", None)
    result["recorded"] = text
    if result.get("kept_existing"):
        with open(p["record"], "r", encoding="utf-8", errors="replace") as handle:
            result["recorded"] = handle.read()


def wait_pod(module):
    """pod_wait: poll the Pod of module.params until it reaches the phase / condition (once a
    second, at most wait_timeout s - lab/wait.py), then record the condition. The module's
    result."""
    p = module.params
    kube = client(p["kubeconfig"], p["context"])
    path = "/api/v1/namespaces/%s/pods/%s" % (p["namespace"], p["name"])
    kept = bool(p["record"]) and os.path.exists(p["record"]) and not p["overwrite"]
    # check mode with a record changed nothing, so there is nothing to wait for: one look, and
    # a real run's wait is said instead of waiting for the effect of a change it did not make
    dry = module.check_mode and bool(p["record"])
    timeout = 0 if kept or dry else p["wait_timeout"]

    def look(_left):
        try:
            pod = kube.get(path, missing_ok=True)
        except KubeError as exc:
            raise PodWaitError("cannot read Pod %s/%s: %s" % (p["namespace"], p["name"], exc))
        return kept or reached(pod, p["phase"], p["condition"]), pod

    try:
        pod, waited = wait_until(_wanted(p), look, timeout, interval=1, describe=describe)
    except WaitTimeout as exc:
        if dry:
            return dict(changed=True, phase=((exc.last or {}).get("status") or {}).get("phase"),
                        waited=0, recorded="",
                        msg="check mode: a real run waits up to %ss for %s=%s on Pod %s/%s "
                            "and records it in %s (now: %s)" % (
                                p["wait_timeout"], p["condition"]["type"],
                                p["condition"]["status"], p["namespace"], p["name"],
                                p["record"], describe(exc.last)))
        raise PodWaitError("Pod %s/%s: %s" % (p["namespace"], p["name"], exc.message))
    status = (pod or {}).get("status") or {}
    result = dict(changed=False, phase=status.get("phase"), conditions=status.get("conditions") or [],
                  waited=round(waited, 1))
    if p["condition"]:
        result["condition"] = condition(pod or {}, p["condition"]["type"])
    if p["record"]:
        _record(module, p, result)
    result["msg"] = summary(result, p)
    return result


def summary(result, p):
    """One line for a person: the recorded (or seen) reason and message, the phase without a
    condition, and the Pod now when an earlier record was kept."""
    cond = result.get("condition") or {}
    if result.get("recorded"):
        reason, message = (result["recorded"].strip().split("\n", 1) + [""])[:2]
        said = "%s: %s" % (reason, message.strip())
    elif p["condition"]:
        said = cond.get("reason") or "%s=%s" % (p["condition"]["type"], cond.get("status"))
        said += ": " + cond["message"] if cond.get("message") else ""
    else:
        said = "Pod %s/%s is %s" % (p["namespace"], p["name"], result.get("phase"))
    if result.get("kept_existing"):
        said += " (recorded earlier; the Pod is now %s)" % result.get("phase")
    return said.strip()
