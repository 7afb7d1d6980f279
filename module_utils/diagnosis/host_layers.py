# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's own layers: the driver and the container runtime.

Each rule takes the walk's :class:`~walk.Seen` (the node, its facts, the Pod, the RuntimeClass,
the error texts, what the source says is missing - all read already) and returns a verdict.
"""

import re

from ansible.module_utils.bundle.layout import node_file
from ansible.module_utils.node.artefacts import APPLICATION_XIDS, gpu_lost_lines, xids
from ansible.module_utils.diagnosis import dra_layers
from ansible.module_utils.diagnosis.kube_objects import TOOLKIT_NO_RESTART
from ansible.module_utils.diagnosis.verdict import amount, ev, text_ev, verdict


def driver(seen):
    """Does the host see its GPUs?

    Judges nvidia-smi on the node (node facts driver_ok, driver_error, driver_version, gpus),
    the kernel's NVRM lines (kernel_xid: Xid 79 "fallen off the bus", "GPU is lost"), the GPU
    count against GFD's ``nvidia.com/gpu.count`` (whole GPUs only), Fabric Manager on NVSwitch
    systems, and the error texts caused at the driver. Cites the facts, the node's driver
    labels (evidence only: with the NodeFeature API they outlive a dead driver, in file mode
    they vanish for a minute on each GFD restart) and the texts.
    Broken: nvidia-smi fails; the kernel says a GPU is gone; fewer GPUs than GFD counted;
    Fabric Manager not active; CUDA error 802 with nvidia-smi working; or, without nvidia-smi,
    a driver error text. Unknown: no nvidia-smi output and no such text (labels never decide).
    """
    facts = seen.facts
    mine = [t for t in seen.texts if t["layer"] == "driver"]
    lost = gpu_lost_lines((facts or {}).get("kernel_xid"))
    if facts is not None and facts.get("driver_ok") is not None:
        return _judge_nvidia_smi(seen, mine, lost)
    return _judge_without_nvidia_smi(seen, mine, lost)


def _driver_label_evidence(seen):
    """The node's driver labels as evidence (never a decision): those present, else the first
    two as <missing>."""
    ref = seen.where.node(seen.name)
    found = [ev("%s .metadata.labels[%s]" % (ref, key), seen.labels[key])
             for key in seen.driver_labels if key in seen.labels]
    return found or [ev("%s .metadata.labels[%s]" % (ref, key), "<missing>") for key in seen.driver_labels[:2]]


def _lost_evidence(seen, lost):
    """The last three kernel lines that say a GPU is gone."""
    return [ev("%s kernel_xid (dmesg)" % seen.where.facts(seen.name), line) for line in lost[-3:]]


def _judge_nvidia_smi(seen, mine, lost):
    """nvidia-smi ran on the node: its answer, the kernel's lost GPUs, the GPU count against GFD's,
    Fabric Manager and the 802 texts decide; other driver texts are history."""
    name, facts, fref = seen.name, seen.facts, seen.where.facts(seen.name)
    evidence = [ev("%s driver_ok (nvidia-smi on the node%s)" % (
        fref, ": " + facts["nvidia_smi"] if facts.get("nvidia_smi") else ""), facts["driver_ok"])]
    if facts.get("driver_version"):
        evidence.append(ev("%s driver_version" % fref, facts["driver_version"]))
    if facts.get("driver_error"):
        evidence.append(ev("%s driver_error (nvidia-smi's output)" % fref, facts["driver_error"]))
    evidence += _lost_evidence(seen, lost) + _driver_label_evidence(seen)
    if not facts["driver_ok"]:
        return verdict("driver", "broken", evidence + text_ev(mine),
                       _driver_next(name, (facts.get("driver_error") or "") + " ".join(lost)))
    if lost:
        return verdict("driver", "broken", evidence, "the kernel on %s says a GPU is gone "
                       "(%s): nvidia-smi still answers for the others. Drain the node, "
                       "reset or reseat the GPU (nvidia-smi -r, or a reboot), check power "
                       "and PCIe; the plugin marks it unhealthy" % (name, lost[-1][:120]))
    fewer = _fewer_gpus_than_gfd(seen, evidence)
    if fewer:
        return fewer
    fabric = facts.get("fabric_manager")
    if fabric is not None:
        evidence.append(ev("%s fabric_manager (systemctl nvidia-fabricmanager)" % fref, fabric))
        if fabric != "active":
            return verdict("driver", "broken", evidence + text_ev(mine),
                           "Fabric Manager is %s on %s, an NVSwitch system: nvidia-smi "
                           "works but CUDA fails with error 802 (system not yet "
                           "initialized). Install/start nvidia-fabricmanager of the "
                           "driver's version (%s) and check its log" % (
                               fabric, name, facts.get("driver_version", "?")))
    for code, pci, line in xids(facts.get("kernel_xid")):
        if code not in APPLICATION_XIDS:
            evidence.append(ev("note", "Xid %d on %s: the device plugin marks that GPU "
                               "unhealthy (%s)" % (code, pci, line[:160])))
    live = [t for t in mine if "802" in t["what"] and fabric is None]
    if live:
        return verdict("driver", "broken", evidence + text_ev(live),
                       "CUDA fails with error 802 while nvidia-smi works: on NVSwitch "
                       "systems (HGX/DGX) Fabric Manager must run - systemctl status "
                       "nvidia-fabricmanager on %s" % name)
    if mine:
        evidence.append(ev("note", "older error texts name the driver, but nvidia-smi "
                           "works on the node now: %s" % mine[0]["line"][:200]))
    return verdict("driver", "ok", evidence, "the host sees its GPUs; go on to the "
                   "container runtime")


def _fewer_gpus_than_gfd(seen, evidence):
    """A broken verdict when nvidia-smi lists fewer whole GPUs than GFD's gpu.count, else None.
    Under a MIG strategy GFD counts MIG devices in gpu.count, so only whole GPUs compare."""
    name, labels = seen.name, seen.labels
    gpus = seen.facts.get("gpus")
    expected = amount(labels.get("nvidia.com/gpu.count"))
    whole = labels.get("nvidia.com/mig.strategy", "none") == "none"
    if gpus is None or not expected or not whole or len(gpus) >= expected:
        return None
    evidence.append(ev("%s gpus (nvidia-smi --query-gpu)" % seen.where.facts(name), len(gpus)))
    evidence.append(ev("%s .metadata.labels[nvidia.com/gpu.count]" % seen.where.node(name),
                       labels["nvidia.com/gpu.count"]))
    return verdict("driver", "broken", evidence, "nvidia-smi on %s lists %d GPU(s), "
                   "GPU feature discovery counted %s: a GPU dropped out (dmesg | grep "
                   "NVRM for Xid 79)" % (name, len(gpus), labels["nvidia.com/gpu.count"]))


def _judge_without_nvidia_smi(seen, mine, lost):
    """No nvidia-smi answer: the kernel's lost GPUs or a driver text break it; else unknown,
    saying why nvidia-smi's output is missing (labels never decide)."""
    name, where = seen.name, seen.where
    fref = where.facts(name)
    evidence = _driver_label_evidence(seen) + _lost_evidence(seen, lost)
    if lost:
        return verdict("driver", "broken", evidence + text_ev(mine),
                       "the kernel on %s says a GPU is gone (%s): drain the node, reset or "
                       "reseat the GPU" % (name, lost[-1][:120]))
    if mine:
        return verdict("driver", "broken", evidence + text_ev(mine),
                       "%s - caused at the driver on %s: %s" % (
                           mine[0]["what"], name, _driver_next(name, mine[0]["line"])))
    why = ("%s holds no nvidia-smi output" % fref) if seen.facts is not None else \
        ("nvidia-smi was not run on %s (%s)" % (name, "no node facts" if where.kind == "live"
                                                else "the %s has no %s" % (where.kind, fref)))
    told = seen.missing.get("nvidia-smi-query.csv")
    if told:
        why += "; the collector says %s" % told
    evidence.append(ev("note", "a driver label is neither proof of a driver (with the "
                       "NodeFeature API it outlives a dead driver) nor of its absence (in "
                       "file mode it vanishes for a minute on each GFD restart)"))
    return verdict("driver", "unknown", evidence, "run nvidia-smi on %s (gpu_node_facts over "
                   "SSH, or a support bundle's %s)" % (name, node_file(name, "nvidia-smi.txt")),
                   reason=why)


def container_runtime(seen):
    """Does the RUNNING containerd give the Pod's container the GPU?

    Judges the Pod's RuntimeClass (read by the walk: its handler, 404, or not in the source),
    the running CRI config from ``crictl info`` (runtimes_running, default_runtime,
    cdi_enabled, cri_error) against what the files would load (``containerd config dump``:
    runtimes_configured - only ever "restart pending"), and the error texts caused here
    (``no runtime for "X" is configured``, unresolvable CDI devices, the plugin's NVML errors).
    Broken: the RuntimeClass is missing; its handler is not loaded in the running daemon; a
    Pod without one runs with a default runtime that is not NVIDIA's and CDI off; the CRI
    service does not answer; a live error text. Skipped: nothing of the node's containerd was
    read. Unknown: only the files were read, or the default runtime/CDI could not be read.

    In order: the RuntimeClass (_runtime_handler), a CRI service that does not answer
    (_cri_down), what the running daemon has against what the files declare
    (Containerd, _containerd_evidence), the texts it makes history (_live_texts), then the
    handler (_judge_handler) or, without one, the default runtime and CDI (_judge_default).
    """
    if seen.rc_name and seen.rc_why is None and seen.runtimeclass is None:
        return verdict("container-runtime", "broken", [ev(seen.where.rc(seen.rc_name), "404 Not Found")],
                       "create RuntimeClass %s (handler: the runtime name in containerd's "
                       "config, e.g. nvidia)" % seen.rc_name)
    handler, evidence = _runtime_handler(seen)
    facts = seen.facts or {}
    if facts.get("cri_error"):
        return _cri_down(seen, evidence)
    daemon = Containerd(facts)
    evidence += _containerd_evidence(seen, daemon)
    live, history = _live_texts(seen, daemon)
    evidence += history
    if getattr(seen, "dra", None) is not None and not live:
        judged = dra_layers.cdi(seen, daemon, evidence)
        if judged:
            return judged
    if handler:
        return _judge_handler(seen, handler, daemon, evidence, live)
    if seen.rc_name and seen.rc_why is not None:
        if live:
            return _text_verdict(seen, evidence, live)
        return verdict("container-runtime", "unknown", evidence, "the RuntimeClass %s could "
                       "not be read here; give its handler" % seen.rc_name,
                       reason="the RuntimeClass is not in this source")
    return _judge_default(seen, daemon, evidence, live)


class Containerd(object):
    """What was read of the node's containerd, from its node facts.

    running: the runtimes the RUNNING daemon has (crictl info; None when not asked);
    configured: those the files make the next start load (containerd config dump; None when
    not read); default, cdi: the running default runtime and CDI (None when unknown);
    binaries: {runtime: its BinaryName}; pending: what a restart would change (restart_pending).
    """

    def __init__(self, facts):
        self.running = facts.get("runtimes_running", facts.get("runtimes_loaded"))
        self.configured = facts.get("runtimes_configured")
        self.default = facts.get("default_runtime")
        self.cdi = facts.get("cdi_enabled")
        self.binaries = facts.get("runtime_binaries") or {}
        self.pending = restart_pending(facts)

    def nvidia_default(self):
        """Is the default runtime NVIDIA's (by its name or its binary)?"""
        return bool(self.default) and ("nvidia" in self.default.lower()
                                       or "nvidia" in self.binaries.get(self.default, "").lower())

    def nvidia_running(self):
        """The NVIDIA runtimes the running daemon has."""
        return [r for r in self.running or [] if "nvidia" in r.lower()]

    def nvidia_configured(self):
        """The NVIDIA runtimes the files declare."""
        return [r for r in self.configured or [] if "nvidia" in r.lower()]


def _runtime_handler(seen):
    """The runtime handler the Pod asks for: (handler or None, its evidence).

    The RuntimeClass's handler; None with a note when the source cannot hold the RuntimeClass,
    None when the Pod names none (its evidence says containerd's default runs it). The walk
    has read the RuntimeClass; a 404 is judged before this."""
    if seen.rc_name:
        if seen.rc_why is not None:
            return None, [ev(seen.where.rc(seen.rc_name), "not readable here: %s" % seen.rc_why)]
        handler = seen.runtimeclass.get("handler")
        return handler, [ev("%s .handler" % seen.where.rc(seen.rc_name), handler)]
    if seen.pod is not None:
        return None, [ev("Pod .spec.runtimeClassName", "<none>: containerd's default runtime runs it")]
    return None, []


def _cri_down(seen, evidence):
    """Broken: crictl info failed - the CRI service does not answer, with containerd's last errors."""
    facts, fref = seen.facts, seen.where.facts(seen.name)
    evidence.append(ev("%s cri_error (crictl info)" % fref, facts["cri_error"]))
    for line in (facts.get("containerd_errors") or [])[-3:]:
        evidence.append(ev("%s containerd_errors" % fref, line))
    return verdict("container-runtime", "broken", evidence,
                   "containerd's CRI service does not answer on %s (crictl info failed): "
                   "the kubelet cannot start any Pod there. Read containerd's log for "
                   "'failed to load plugin io.containerd.grpc.v1.cri' and fix the config "
                   "it names, then restart containerd" % seen.name)


def _containerd_evidence(seen, daemon):
    """What the running daemon has and what the files declare, as evidence, and a pending
    restart as a finding."""
    fref = seen.where.facts(seen.name)
    out = []
    if daemon.running is not None:
        out.append(ev("%s runtimes_running (crictl info: the running daemon)" % fref, list(daemon.running)))
    if daemon.configured is not None:
        out.append(ev("%s runtimes_configured (containerd config dump: what the "
                      "files make the next start load)" % fref, list(daemon.configured)))
    if daemon.default:
        out.append(ev("%s default_runtime" % fref, daemon.default))
    if daemon.cdi is not None:
        out.append(ev("%s cdi_enabled" % fref, daemon.cdi))
    if daemon.pending:
        out.append(ev("finding", "restart pending on %s: %s" % (seen.name, daemon.pending)))
    return out + _toolkit_evidence(seen, daemon) + _sentinel_evidence(seen)


def _toolkit_evidence(seen, daemon):
    """NVIDIA's toolkit installer on the node, in its own words about restarting containerd
    (walk.Diagnosis.toolkit); with a restart pending, a finding that names the installer that
    wrote and did not restart."""
    out = []
    for ref, mode, said in getattr(seen, "toolkit", None) or []:
        out.append(ev("%s (NVIDIA's toolkit installer, RUNTIME_RESTART_MODE=%s)" % (ref, mode),
                      said[-1] if said else "no line about restarting containerd in its log"))
        skipped = [line for line in said if re.search(TOOLKIT_NO_RESTART, line)]
        if daemon.pending and skipped:
            out.append(ev("finding", "the toolkit installer on %s wrote containerd's config and did not restart it - "
                                     "its own words: %s; containerd runs the old config until it is restarted"
                          % (seen.name, skipped[-1][:240])))
    return out


# node-problem-detector's sentinel (issue 39, role runtime_sentinel): its Node conditions
# (RuntimeIgnoresCDI, issue 48: a DRA GPU driver's CDI specs or plugin on a node whose containerd applies no CDI)
SENTINEL_CONDITIONS = ("RuntimeRestartPending", "RuntimeBreaksOnRestart", "RuntimeIgnoresCDI")


def _sentinel_evidence(seen):
    """The sentinel's conditions on the Node object (live, or a bundle's nodes), as evidence;
    RuntimeBreaksOnRestart=True also as a finding - the next restart of containerd breaks the node -
    and RuntimeIgnoresCDI=True - containerd drops the CDI devices the kubelet hands it."""
    out = []
    conditions = {c.get("type"): c for c in ((seen.node or {}).get("status") or {}).get("conditions") or []
                  if isinstance(c, dict)}
    for kind in SENTINEL_CONDITIONS:
        cond = conditions.get(kind)
        if cond is None:
            continue
        out.append(ev("%s .status.conditions %s (node-problem-detector's sentinel)" % (seen.where.node(seen.name), kind),
                      "%s: %s" % (cond.get("status"), cond.get("message") or cond.get("reason") or "")))
        if kind == "RuntimeBreaksOnRestart" and cond.get("status") == "True":
            out.append(ev("finding", "the sentinel says the next restart of containerd on %s serves no CRI "
                                     "(%s): reboot it only after the fix" % (seen.name, cond.get("message"))))
        if kind == "RuntimeIgnoresCDI" and cond.get("status") == "True":
            out.append(ev("finding", "the sentinel says containerd on %s drops the CDI devices the kubelet hands "
                                     "it (%s)" % (seen.name, cond.get("message"))))
    return out


def _live_texts(seen, daemon):
    """The container-runtime texts that still hold, and notes for those the running daemon
    contradicts (history): ``no runtime for "X"`` while it has X, a CRI plugin error while it
    answers."""
    live, history = [], []
    for t in seen.texts:
        if t["layer"] != "container-runtime":
            continue
        match = t["match"]
        if match.re.pattern.startswith("no runtime for") and daemon.running is not None and \
                match.group(1) in daemon.running:
            history.append(ev("note", "an older error says containerd lacked %s; the running daemon "
                              "has it now: %s" % (match.group(1), t["line"][:200])))
        elif "CRI plugin is not serving" in t["what"] and daemon.running is not None:
            history.append(ev("note", "an older containerd error: %s" % t["line"][:200]))
        else:
            live.append(t)
    return live, history


def _text_verdict(seen, evidence, live):
    """Broken, named by the first live error text, with what to do about it."""
    return verdict("container-runtime", "broken", evidence + text_ev(live), "%s: %s" % (
        live[0]["what"], _runtime_next(seen.name, live[0])))


def _unread_reason(seen):
    """Why a runtime verdict is skipped: the running daemon was not read (and the collector's word)."""
    told = seen.missing.get("crictl-info.json")
    return "what the running containerd holds can only be read on the node" + (
        "; the collector says %s" % told if told else "")


def _judge_handler(seen, handler, daemon, evidence, live):
    """The Pod names a handler: the running daemon decides; without it, the files can only
    break it (they lack the handler) or leave it unknown (a restart may be pending)."""
    name = seen.name
    if daemon.running is not None:
        return _judge_handler_running(seen, handler, daemon, evidence, live)
    if daemon.configured is not None and handler not in daemon.configured:
        return verdict("container-runtime", "broken", evidence + text_ev(live),
                       "not even containerd's files on %s define the %s runtime (config "
                       "dump); the running daemon was not asked (crictl info). Add the "
                       "runtime (nvidia-ctk runtime configure --runtime=containerd) and "
                       "restart containerd" % (name, handler))
    if live:
        return _text_verdict(seen, evidence, live)
    if daemon.configured is not None:
        return verdict("container-runtime", "unknown", evidence,
                       "the files define %s; ask the running daemon with `crictl info` "
                       "on %s (a restart may be pending)" % (handler, name),
                       reason="only the files were read, not the running containerd")
    return verdict("container-runtime", "skipped", evidence,
                   "on %s run `crictl info` (and `containerd config dump`) - the "
                   "gpu_node_facts role over SSH, or a support bundle" % name,
                   reason=_unread_reason(seen))


def _judge_handler_running(seen, handler, daemon, evidence, live):
    """The running daemon was read: the handler loaded (ok, unless a live text), only in the
    files (restart pending), or nowhere."""
    name = seen.name
    if handler in daemon.running:
        if live:
            return _text_verdict(seen, evidence, live)
        return verdict("container-runtime", "ok", evidence, "containerd runs with "
                       "the %s runtime loaded; go on to the device plugin%s" % (
                           handler, " (restart pending: %s)" % daemon.pending if daemon.pending else ""))
    if daemon.configured is not None and handler in daemon.configured:
        return verdict("container-runtime", "broken", evidence + text_ev(live),
                       "the files give containerd the %s runtime but the running "
                       "daemon does not have it: a restart is pending (the drop-in "
                       "was written, containerd never restarted). On %s: systemctl "
                       "restart containerd - after checking `containerd config dump` "
                       "still lists runc" % (handler, name))
    return verdict("container-runtime", "broken", evidence + text_ev(live),
                   "containerd on %s has not loaded the %s runtime: check the drop-in "
                   "is imported and merged (containerd_merge), then restart "
                   "containerd - a Pod with this RuntimeClass fails with 'no runtime "
                   "for \"%s\" is configured'" % (name, handler, handler))


def _judge_default(seen, daemon, evidence, live):
    """No handler: containerd's default runtime and CDI decide - NVIDIA's default or CDI on is
    ok; a Pod run by another default with CDI off is broken; with no Pod, the node's runtimes."""
    if live:
        return _text_verdict(seen, evidence, live)
    if daemon.nvidia_default():
        return verdict("container-runtime", "ok", evidence, "containerd's default runtime %s "
                       "is NVIDIA's: Pods without a RuntimeClass get the GPU; go on to the "
                       "device plugin" % daemon.default)
    if daemon.cdi:
        return verdict("container-runtime", "ok", evidence, "CDI is on in the running "
                       "containerd: the plugin's CDI devices reach Pods without a "
                       "RuntimeClass (the GPU Operator's default since v25.10); go on to the "
                       "device plugin")
    if seen.pod is None:
        found = _judge_node_runtimes(seen, daemon, evidence)
        if found:
            return found
    elif daemon.default and daemon.cdi is False:
        loaded = daemon.nvidia_running()
        return verdict("container-runtime", "broken", evidence,
                       "the Pod has no runtimeClassName, so containerd's default runtime %s "
                       "runs it - not NVIDIA's - and CDI is off: the container gets no GPU. "
                       "Give the Pod runtimeClassName: %s, or make NVIDIA's runtime the "
                       "default, or enable CDI (enable_cdi, containerd 1.7+)" % (
                           daemon.default, loaded[0] if loaded else "nvidia"))
    return _default_unread(seen, daemon, evidence)


def _judge_node_runtimes(seen, daemon, evidence):
    """No Pod: an NVIDIA runtime loaded is ok (for Pods that name it); none loaded with CDI off
    is broken - saying whether the files would load one on a restart. Else None."""
    name, running, configured = seen.name, daemon.running, daemon.configured
    loaded = daemon.nvidia_running()
    if loaded:
        return verdict("container-runtime", "ok", evidence, "containerd runs with %s "
                       "loaded for Pods whose RuntimeClass names it; its default is %s "
                       "and CDI is %s" % (", ".join(loaded), daemon.default or "unknown",
                                          {True: "on", False: "off"}.get(daemon.cdi, "unknown")))
    if running is None or daemon.cdi is not False:
        return None
    planned = daemon.nvidia_configured()
    if planned:
        return verdict("container-runtime", "broken", evidence, "containerd on %s "
                       "runs without an NVIDIA runtime and with CDI off; the files give "
                       "it %s but the daemon never restarted (restart pending)%s" % (
                           name, ", ".join(planned),
                           " - and the next start drops runc, which its "
                           "default_runtime_name needs: fix the drop-in (merge it "
                           "with the main config, containerd_merge) before restarting"
                           if "runc" in running and "runc" not in (configured or [])
                           else ": systemctl restart containerd"))
    return verdict("container-runtime", "broken", evidence, "containerd on %s has no "
                   "NVIDIA runtime loaded and CDI off: no container there gets a GPU "
                   "(nvidia-ctk runtime configure --runtime=containerd, restart "
                   "containerd)" % name)


def _default_unread(seen, daemon, evidence):
    """The default runtime and CDI left it open: skipped when nothing of containerd was read,
    else unknown, naming what could not be read."""
    name = seen.name
    if not seen.facts or (daemon.running is None and daemon.configured is None):
        return verdict("container-runtime", "skipped", evidence,
                       "on %s run `crictl info` (gpu_node_facts over SSH, or a support "
                       "bundle's %s)" % (name, node_file(name, "crictl-info.json")),
                       reason=_unread_reason(seen))
    missing = [k for k, v in (("the default runtime", daemon.default), ("CDI", daemon.cdi)) if v is None]
    return verdict("container-runtime", "unknown", evidence,
                   "without a RuntimeClass the default runtime and CDI decide; %s could not "
                   "be read (crictl info on %s)" % (" and ".join(missing) or "neither", name),
                   reason="%s unknown" % " and ".join(missing or ["the default runtime"]))


def restart_pending(facts):
    """What differs between the running daemon and the files, or None."""
    running = facts.get("runtimes_running", facts.get("runtimes_loaded"))
    configured = facts.get("runtimes_configured")
    parts = []
    if running is not None and configured is not None and set(running) != set(configured):
        added = sorted(set(configured) - set(running))
        dropped = sorted(set(running) - set(configured))
        if added:
            parts.append("the next start adds %s" % ", ".join(added))
        if dropped:
            parts.append("the next start drops %s" % ", ".join(dropped))
    if facts.get("default_runtime") and facts.get("default_runtime_configured") and \
            facts["default_runtime"] != facts["default_runtime_configured"] and \
            "runtimes_running" in facts:
        parts.append("the default runtime changes from %s to %s" % (
            facts["default_runtime"], facts["default_runtime_configured"]))
    if not parts and facts.get("restart_pending"):
        parts.append("the files differ from the running daemon")
    if parts and configured is not None and "runc" in (running or []) and "runc" not in configured:
        parts.append("with runc gone from the files, the CRI plugin of containerd 1.6/1.7 fails to "
                     "load on restart when default_runtime_name is runc")
    return "; ".join(parts) or None


def _driver_next(name, text):
    low = (text or "").lower()
    if "version mismatch" in low:
        return ("on %s the NVIDIA kernel module and the user-space library differ (a driver "
                "upgrade without reboot): reboot, or unload and reload the nvidia modules" % name)
    if "gpu is lost" in low or "fallen off the bus" in low:
        return ("on %s a GPU fell off the bus (Xid 79): drain the node, reset or reseat the GPU, "
                "check power/thermals/PCIe" % name)
    if "no devices were found" in low or "no devices found" in low:
        return ("on %s the driver lists no GPU: check lspci | grep -i nvidia, the kernel log "
                "(dmesg | grep NVRM) and MIG mode" % name)
    if "802" in low or "not yet initialized" in low:
        return ("Fabric Manager: systemctl status nvidia-fabricmanager on %s" % name)
    return ("on %s: run nvidia-smi and check the kernel module (lsmod | grep nvidia; dkms status) "
            "- a kernel update needs the driver rebuilt for the new kernel; with the GPU "
            "Operator see the nvidia-driver-daemonset Pod's log" % name)


def _runtime_next(name, finding):
    what = finding["what"]
    if "CDI spec" in what:
        return ("on %s generate the CDI spec (nvidia-ctk cdi generate --output=/var/run/cdi/"
                "nvidia.yaml, or the toolkit/Operator's cdi settings) and check cdi_spec_dirs"
                % name)
    if "no runtime of that name" in what:
        return ("containerd on %s lacks runtime %s: configure it (nvidia-ctk runtime configure) "
                "and restart containerd" % (name, finding["match"].group(1)))
    if "no NVIDIA driver libraries" in what:
        return ("on %s give the plugin's Pod NVIDIA's runtime (runtimeClassName: nvidia, or "
                "nvidia as containerd's default) or enable CDI" % name)
    return "on %s check containerd's NVIDIA runtime and the toolkit (%s)" % (name, finding["line"][:120])
