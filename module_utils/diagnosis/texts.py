# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Error texts -> the layer that causes them.

An error that surfaces in the workload or the device plugin (an event, a container state's
message, a log line, containerd's log, the kubelet's log) but is caused lower is judged at the
lower layer, with the text as evidence. The texts are given here already read (the walk reads
them from the source); nothing in this module reads.
"""

import re

# Error texts -> the layer that causes them. Order matters: the first rule that matches a line
# names it. Sources of the texts: tests/diagnosis_corpus/*/SOURCE.md.
TEXT_RULES = [
    ("driver", "nvidia-container-cli could not load the host's driver library or the driver "
     "is not loaded", re.compile(r"nvidia-container-cli: initialization error: (load library "
                                 r"failed|nvml error: driver not loaded)", re.I)),
    ("driver", "the driver's user-space library and kernel module differ (driver upgraded "
     "without a reboot or module reload)", re.compile(r"Driver/library version mismatch", re.I)),
    ("driver", "a GPU is gone for the host (Xid 79, GPU is lost)",
     re.compile(r"GPU is lost|fallen off the bus", re.I)),
    ("driver", "the NVIDIA driver is not loaded or does not answer",
     re.compile(r"couldn'?t communicate with the NVIDIA driver|could not communicate with the "
                r"NVIDIA driver|NVIDIA driver on your system is not loaded", re.I)),
    ("driver", "CUDA is not initialized: on NVSwitch systems Fabric Manager is not running "
     "(CUDA error 802)", re.compile(r"error 802|system not yet initialized|cudaErrorSystemNotReady"
                                    r"|CUDA_ERROR_SYSTEM_NOT_READY", re.I)),
    ("container-runtime", "containerd has no runtime of that name loaded (FailedCreatePodSandBox)",
     re.compile(r'no runtime for "([^"]+)" is configured')),
    ("container-runtime", "a CDI device the Pod was given has no CDI spec on the node "
     "(the toolkit's spec in /etc/cdi or /var/run/cdi is missing)",
     re.compile(r"unresolvable CDI devices", re.I)),
    ("container-runtime", "the container got no NVIDIA driver libraries: its runtime is not "
     "NVIDIA's and CDI is off", re.compile(r"could not load NVML library|ERROR_LIBRARY_NOT_FOUND|"
                                           r"libnvidia-ml\.so\.1: cannot open shared object", re.I)),
    ("container-runtime", "NVML in the container fails with Unknown Error (the container lost "
     "its device access, e.g. after a systemd reload with runc's systemd cgroup driver)",
     re.compile(r"Failed to initialize NVML: Unknown Error", re.I)),
    ("container-runtime", "the GPU was not handed into the container",
     re.compile(r"no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE", re.I)),
    ("container-runtime", "containerd's CRI plugin is not serving",
     re.compile(r"failed to load plugin io\.containerd\.grpc\.v1\.cri|unknown service "
                r"runtime\.v1\.RuntimeService", re.I)),
    ("container-runtime", "the plugin found no GPU: its container has no NVIDIA runtime or CDI "
     "(NVML not detected, 'Incompatible strategy detected auto'), or the driver lists none",
     re.compile(r"No devices found|Incompatible strategy detected", re.I)),
    ("device-plugin", "the plugin refuses the node's MIG layout under its MIG strategy: single "
     "needs one MIG profile on every MIG GPU (use mixed, or lay out one profile)",
     re.compile(r"invalid MIG configuration.*|more than one MIG device type present.*", re.I)),
    ("device-plugin", "the kubelet's Allocate call to the device plugin failed "
     "(UnexpectedAdmissionError)", re.compile(r"UnexpectedAdmissionError|Allocate failed|"
                                              r"no healthy devices present|requested number of "
                                              r"devices unavailable", re.I)),
    ("node-advertisement", "the plugin marked a GPU unhealthy after an Xid",
     re.compile(r"XidCriticalError|will go unhealthy|marking device \S+ as unhealthy", re.I)),
]


def text_findings(text, source):
    """[{layer, what, line, source, match}] for each line of `text` a TEXT_RULE names."""
    out, seen = [], set()
    for line in (text or "").splitlines():
        for layer, what, pattern in TEXT_RULES:
            match = pattern.search(line)
            if match:
                key = (layer, what, line.strip()[-300:])
                if key not in seen:
                    seen.add(key)
                    out.append({"layer": layer, "what": what, "line": line.strip()[-300:],
                                "source": source, "match": match})
                break
    return out


def pod_findings(pod, role, where, events=None, log=None):
    """Findings from a Pod's status, container states, events (a list, or None when the source
    has none) and log (text, or None when not read)."""
    ns, name = pod["metadata"].get("namespace"), pod["metadata"]["name"]
    ref = where.pod(ns, name)
    out = []
    status = pod.get("status") or {}
    if status.get("reason") or status.get("message"):
        out += text_findings("%s: %s" % (status.get("reason", ""), status.get("message", "")),
                             "%s .status (%s)" % (ref, role))
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        for state_key in ("state", "lastState"):
            for kind, detail in ((cs.get(state_key) or {}).items()):
                if isinstance(detail, dict) and detail.get("message"):
                    out += text_findings(detail["message"], "%s .status.containerStatuses[%s]."
                                         "%s.%s.message (%s)" % (ref, cs.get("name"),
                                                                 state_key, kind, role))
    for event in events or []:
        out += text_findings("%s: %s" % (event.get("reason", ""), event.get("message", "")),
                             "%s %s (%s)" % (where.events(ns, name), event.get("reason", ""), role))
    if log is not None:
        out += text_findings(log, "%s (%s)" % (where.log(ns, name), role))
    return out


# a log line that reports an error: klog's E/F severity (E1203 10:31:00.607547 ...), or words
# programs use for one
ERROR_LINE = re.compile(r"^[EF]\d{4} |\b(error|failed|fatal|panic|cannot|unable|refused|not found)\b", re.I)


def last_error(log):
    """The last line of a log that reports an error (ERROR_LINE), else its last non-empty line,
    else None: what a crash-looping container said last - its own words, whatever they are."""
    found = last_errors(log, 1)
    return found[0] if found else None


def last_errors(log, count):
    """The last `count` distinct lines of a log that report an error, oldest first (else its
    last non-empty line): for a log of several containers in one file, each may have said one."""
    lines = [line.strip()[-300:] for line in (log or "").splitlines() if line.strip()]
    out = []
    for line in reversed(lines):
        if ERROR_LINE.search(line) and line not in out:
            out.append(line)
            if len(out) == count:
                break
    return list(reversed(out)) or lines[-1:]


def failing(pod):
    """Names of the Pod's containers that crash or failed: waiting after a restart, or
    terminated with a non-zero exit code (now or last time)."""
    out = []
    for cs in ((pod.get("status") or {}).get("containerStatuses") or []):
        state, last = cs.get("state") or {}, cs.get("lastState") or {}
        code = (state.get("terminated") or {}).get("exitCode") or (last.get("terminated") or {}).get("exitCode")
        if code or ("waiting" in state and cs.get("restartCount", 0) > 0):
            out.append(cs.get("name"))
    # in the Pod's own order (the API sorts statuses by name): its main container first
    order = [c.get("name") for c in ((pod.get("spec") or {}).get("containers") or [])]
    return sorted(out, key=lambda n: order.index(n) if n in order else len(order))


def wants_log(pod):
    """Has the Pod run containers whose log could say something (bound, with states)?"""
    return bool((pod.get("spec") or {}).get("nodeName") and (pod.get("status") or {}).get(
        "containerStatuses"))


def pending_pod_findings(pod, where):
    """Findings from the status of a Pod not bound to the node judged."""
    status = pod.get("status") or {}
    return text_findings("%s: %s" % (status.get("reason", ""), status.get("message", "")),
                         "%s .status" % where.pod(pod["metadata"].get("namespace"),
                                                  pod["metadata"]["name"]))


def node_findings(name, facts, where, kubelet_log=None):
    """Findings from the node's side: containerd's errors, crictl's failure, the kubelet log."""
    found = []
    for line in facts.get("containerd_errors") or []:
        found += text_findings(line, "%s containerd_errors (containerd's log)" % where.facts(name))
    if facts.get("cri_error"):
        found += text_findings(facts["cri_error"], "%s cri_error (crictl info)" % where.facts(name))
    if kubelet_log is not None:
        found += text_findings(kubelet_log, "%skubelet.log" % where.facts(name))
    return found
