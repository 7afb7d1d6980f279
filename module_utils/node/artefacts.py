# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a GPU node prints, read into node facts: one parser per artefact.

The live node side (gpu_node_facts) and a support bundle (``nodes/<node>/<file>``) hand the
same raw texts to :func:`facts_from_artefacts`, so both give the same dict (the node-facts
contract: driver_ok, driver_version, driver_error, gpus, runtimes_running, runtimes_configured,
restart_pending, default_runtime, cdi_enabled, cdi_spec_dirs, cri_error, containerd_errors,
kernel_xid, fabric_manager, device_plugin_sockets, mig_lgip, mig_lgipp, cdi_specs,
container_devices). A key is present only when its artefact was there and could be read.

The shapes are the real components' own:
- ``crictl info``: the CRI plugin's Status(verbose) info. ``.config`` is the running CRI config
  (containerd 1.6/1.7 ``pkg/cri/config`` json tags, 2.x ``internal/cri/config``):
  ``.config.containerd.defaultRuntimeName``, ``.config.containerd.runtimes.<name>``,
  ``.config.enableCDI`` / ``.config.cdiSpecDirs`` (1.7 and 2.x; CDI does not exist in 1.6);
  2.x adds a top-level ``runtimeHandlers`` list whose default entry has an empty name.
- ``containerd config dump``: a new process that merges the files (what the NEXT start loads);
  ``plugins."io.containerd.grpc.v1.cri"`` (1.x) or ``plugins."io.containerd.cri.v1.runtime"``
  (2.x).
- ``nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv,noheader``.
- kernel lines with ``NVRM:`` (``NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off
  the bus.``).
- ``systemctl status nvidia-fabricmanager`` / ``is-active`` / ``show -p LoadState,ActiveState``.
- ``ls -1 /var/lib/kubelet/device-plugins``: the plugin's socket is ``nvidia-<resource>.sock``.
- ``cdi-specs.json`` and ``container-devices.json``: not a tool's output but the collector's own
  summaries, made on the node (node/cdi.py) - the CDI specs in the spec folders, and the
  ``/dev/nvidia*`` nodes and CDI devices of each running container (``crictl ps``, ``crictl inspect``).
"""

import json
import re

from ansible.module_utils.lab.refusals import LabError

try:
    import tomllib
except ImportError:  # Python < 3.11: the regex reader below still names the runtimes
    tomllib = None

CRI_PLUGINS = ("io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime")

# The node's file names - the one list: every file the collector (node/collect.py) can give, in the
# order it collects them; a support bundle's nodes/<node>/ folder (bundle/layout.py) holds them.
KUBELET_LOG = "kubelet.log"
CDI_SPECS = "cdi-specs.json"
CONTAINER_DEVICES = "container-devices.json"
NODE_FILES = ("nvidia-smi.txt", "nvidia-smi-query.csv", "mig-lgip.txt", "mig-lgipp.txt",
              "crictl-info.json", "containerd-config-dump.toml", CDI_SPECS, CONTAINER_DEVICES,
              "containerd.log", KUBELET_LOG, "device-plugins.txt", "dmesg.txt", "fabric-manager.txt")
# The ones node facts are read from (issue 21, item 3): all but the kubelet's log, which only the
# diagnosis's text rules read.
ARTEFACTS = tuple(name for name in NODE_FILES if name != KUBELET_LOG)

# nvidia-smi's own words when it cannot work (NVML return strings; nvidia-smi's messages).
SMI_FAILURES = (
    "NVIDIA-SMI has failed",
    "Failed to initialize NVML",
    "Driver/library version mismatch",
    "No devices were found",
    "Unable to determine the device handle",
    "GPU is lost",
    "couldn't communicate with the NVIDIA driver",
    "could not communicate with the NVIDIA driver",
    "Unknown Error",
    "NVML library version",
    "command not found",
)

# Xids the device plugin does NOT treat as a device failure (application errors): its
# default skip list (k8s-device-plugin internal/rm/health.go: 13, 31, 43, 45, 68, 109).
APPLICATION_XIDS = {13, 31, 43, 45, 68, 109}
# Kernel lines that mean a GPU is gone for the host.
GPU_LOST = re.compile(r"fallen off the bus|GPU is lost|RmInitAdapter failed|"
                      r"Xid \([^)]*\): 79\b", re.I)
XID = re.compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<code>\d+)")


class ArtefactError(LabError):
    """An artefact that cannot be read: the message names it, the line and the fix."""

    def __init__(self, message):
        self.message = message
        super().__init__(message)


# ------------------------------------------------------------------------------- crictl
def parse_crictl_info(text, name="crictl info"):
    """The running CRI config from ``crictl info`` output.

    Returns {runtimes_running, default_runtime, cdi_enabled, cdi_spec_dirs, runtime_ready,
    runtime_handlers} (keys only when present), or {cri_error: text} when the text is not the
    JSON crictl prints (the collector kept crictl's error instead)."""
    text = (text or "").strip()
    if not text:
        return {}
    try:
        info = json.loads(text)
    except ValueError:
        if text.startswith("{"):
            try:
                json.loads(text)
            except ValueError as exc:
                raise ArtefactError("%s: not JSON at line %s column %s (%s); keep `crictl info` "
                                    "output as printed, or its error text" % (
                                        name, getattr(exc, "lineno", "?"),
                                        getattr(exc, "colno", "?"), getattr(exc, "msg", exc)))
        return {"cri_error": _first_lines(text, 5)}
    if not isinstance(info, dict):
        raise ArtefactError("%s: expected the JSON object `crictl info` prints, got %s"
                            % (name, type(info).__name__))
    out = {}
    config = info.get("config")
    if isinstance(config, str):  # the raw verbose info: each value is a JSON document
        try:
            config = json.loads(config)
        except ValueError:
            config = None
    if isinstance(config, dict):
        containerd = config.get("containerd") or {}
        runtimes = containerd.get("runtimes")
        if isinstance(runtimes, dict):
            out["runtimes_running"] = list(runtimes)
        if containerd.get("defaultRuntimeName"):
            out["default_runtime"] = containerd["defaultRuntimeName"]
        if "enableCDI" in config:
            out["cdi_enabled"] = bool(config["enableCDI"])
        elif isinstance(config.get("cdiSpecDirs"), list):
            # containerd 2.4: CDI has no switch any more (always on); crictl info names its folders only
            out["cdi_enabled"] = True
        elif "runtimes_running" in out:
            # the running CRI config has no enableCDI: a daemon without CDI (containerd 1.6)
            out["cdi_absent"] = True
        if isinstance(config.get("cdiSpecDirs"), list):
            out["cdi_spec_dirs"] = [str(d) for d in config["cdiSpecDirs"]]
        binaries = {}
        for rname, rt in (runtimes or {}).items() if isinstance(runtimes, dict) else []:
            options = (rt or {}).get("options") or {}
            binary = options.get("BinaryName") or options.get("binary_name")
            if binary:
                binaries[rname] = binary
        if binaries:
            out["runtime_binaries"] = binaries
    handlers = info.get("runtimeHandlers")
    if isinstance(handlers, list):
        names = [h.get("name") for h in handlers if isinstance(h, dict)]
        out["runtime_handlers"] = [n for n in names if n]
        if "runtimes_running" not in out:
            out["runtimes_running"] = list(out["runtime_handlers"])
    for cond in ((info.get("status") or {}).get("conditions") or []):
        if isinstance(cond, dict) and cond.get("type") == "RuntimeReady":
            out["runtime_ready"] = cond.get("status") in (True, "true", "True")
    return out


# ------------------------------------------------------------------------- config dump
_RUNTIME_HEADER = re.compile(
    r"""^\s*\[plugins\.(?:"io\.containerd\.grpc\.v1\.cri"|'io\.containerd\.grpc\.v1\.cri'|"""
    r"""'io\.containerd\.cri\.v1\.runtime'|"io\.containerd\.cri\.v1\.runtime")"""
    r"""\.containerd\.runtimes\.("[^"]+"|'[^']+'|[A-Za-z0-9_-]+)\]\s*$""", re.M)


def runtimes_from_dump(text):
    """Runtime names of a `containerd config dump` (1.x and 2.x spelling), in order.

    Only the runtime tables themselves count - `runtimes.nvidia.options` is not a runtime, and
    `nvidia-cdi` is not `nvidia`."""
    names = []
    for match in _RUNTIME_HEADER.finditer(text or ""):
        name = match.group(1).strip("\"'")
        if name not in names:
            names.append(name)
    return names


def parse_config_dump(text, name="containerd config dump"):
    """{runtimes_configured, default_runtime_configured, cdi_enabled_configured} of a dump."""
    text = text or ""
    if not text.strip():
        return {}
    out = {}
    data = None
    if tomllib is not None:
        try:
            data = tomllib.loads(text)
        except ValueError as exc:
            raise ArtefactError("%s: not TOML (%s); keep `containerd config dump` output as "
                                "printed" % (name, exc))
    if data is not None:
        plugins = data.get("plugins") or {}
        for plugin in CRI_PLUGINS:
            cri = plugins.get(plugin)
            if not isinstance(cri, dict):
                continue
            containerd = cri.get("containerd") or {}
            if isinstance(containerd.get("runtimes"), dict):
                out["runtimes_configured"] = list(containerd["runtimes"])
            if containerd.get("default_runtime_name"):
                out["default_runtime_configured"] = containerd["default_runtime_name"]
            if "enable_cdi" in cri:
                out["cdi_enabled_configured"] = bool(cri["enable_cdi"])
            if isinstance(cri.get("cdi_spec_dirs"), list):
                out["cdi_spec_dirs_configured"] = list(cri["cdi_spec_dirs"])
            if out:
                break
        if "runtimes_configured" not in out and data.get("disabled_plugins"):
            disabled = [str(p) for p in data["disabled_plugins"]]
            if any(p in ("cri",) + CRI_PLUGINS for p in disabled):
                out["cri_disabled"] = True
    else:
        out["runtimes_configured"] = runtimes_from_dump(text)
        match = re.search(r'^\s*default_runtime_name\s*=\s*["\']([^"\']+)', text, re.M)
        if match:
            out["default_runtime_configured"] = match.group(1)
    return out


# ----------------------------------------------------------------------------- nvidia-smi
def smi_failure(text):
    """nvidia-smi's failure message in its output, or None."""
    for line in (text or "").splitlines():
        if any(marker.lower() in line.lower() for marker in SMI_FAILURES):
            return _first_lines(text, 4)
    return None


def parse_smi_query(text, name="nvidia-smi --query-gpu"):
    """GPUs of ``--query-gpu=index,name,uuid,driver_version,memory.total --format=csv,noheader``."""
    gpus = []
    for number, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 5 or not cells[0].isdigit():
            if smi_failure(line):
                return gpus
            if line.lower().startswith("index"):
                continue  # a header: `--format=csv` without noheader
            raise ArtefactError("%s line %d: %r is not index, name, uuid, driver_version, "
                                "memory.total; collect it with --format=csv,noheader"
                                % (name, number, line[:120]))
        memory = re.match(r"(\d+)", cells[-1])
        gpus.append({"index": int(cells[0]), "name": ", ".join(cells[1:-3]), "uuid": cells[-3],
                     "driver_version": cells[-2],
                     "memory_total_mib": int(memory.group(1)) if memory else None})
    return gpus


def parse_smi_text(text):
    """{driver_version} from the plain `nvidia-smi` table, or {driver_error} when it failed."""
    out = {}
    failure = smi_failure(text)
    if failure:
        out["driver_error"] = failure
        return out
    match = re.search(r"Driver Version\s*:?\s*([0-9][0-9.]+)", text or "")
    if match:
        out["driver_version"] = match.group(1)
    return out


# --------------------------------------------------------------------------------- kernel
def kernel_nvrm_lines(text, limit=50):
    """The kernel log's NVRM lines (Xid, fallen off the bus, GPU is lost), the last `limit`."""
    lines = [line.strip() for line in (text or "").splitlines()
             if "NVRM:" in line or "nvidia-nvswitch" in line.lower()]
    return lines[-limit:]


def xids(lines):
    """[(code, pci, line)] of the Xid lines."""
    out = []
    for line in lines or []:
        match = XID.search(line)
        if match:
            out.append((int(match.group("code")), match.group("pci"), line))
    return out


def gpu_lost_lines(lines):
    return [line for line in lines or [] if GPU_LOST.search(line)]


# ------------------------------------------------------------------------- fabric manager
def parse_fabric_manager(text):
    """active / inactive / failed / activating / not-installed, or None when unreadable."""
    text = (text or "").strip()
    if not text:
        return None
    low = text.lower()
    if "could not be found" in low or "loadstate=not-found" in low or \
            re.search(r"loaded:\s*not-found", low):
        return "not-installed"
    match = re.search(r"activestate=(\w+)", low) or re.search(r"active:\s*([\w-]+)", low)
    if match:
        return match.group(1)
    first = low.split()[0]
    if first in ("active", "inactive", "failed", "activating", "deactivating", "unknown"):
        return "not-installed" if first == "unknown" else first
    return None


# ---------------------------------------------------------------------------------- sockets
def plugin_sockets(names, resources=None):
    """Names of the NVIDIA device plugin's sockets: ``nvidia-<resource>.sock``.

    `resources`: resource names (``gpu``, ``mig-1g.10gb``, or with the ``nvidia.com/``
    prefix); without them any ``nvidia-*.sock``. ``kubelet.sock`` is the kubelet's own."""
    wanted = None
    if resources:
        wanted = {"nvidia-%s.sock" % r.split("/", 1)[-1] for r in resources}
    out = []
    for entry in names or []:
        base = entry.strip().rstrip("=").split("/")[-1]
        if not base.endswith(".sock") or not base.startswith("nvidia-"):
            continue
        if wanted is not None and base not in wanted:
            continue
        if base not in out:
            out.append(base)
    return out


# ------------------------------------------------------------------------- containerd log
_LEVEL = re.compile(r'level=(error|fatal|panic)\b|"level"\s*:\s*"(error|fatal|panic)"')
# containerd 1.6.20 logs a CRI plugin that fails to load at level=warning (reproduced:
# tests/diagnosis_corpus/containerd-1.6.20/containerd-after-restart.log), so that line counts too.
_PLUGIN_FAILED = re.compile(r'failed to load plugin')


def containerd_errors(text, limit=20):
    """level=error/fatal lines of containerd's log (logrus text or JSON) and its "failed to
    load plugin" lines (a warning in 1.6), the last `limit`."""
    return [line.strip() for line in (text or "").splitlines()
            if _LEVEL.search(line) or _PLUGIN_FAILED.search(line)][-limit:]


# ------------------------------------------------------- CDI specs, the containers' devices
def _summary(text, name, key):
    """The collector's JSON summary `name` (node/cdi.py), checked to hold the `key` list."""
    try:
        doc = json.loads(text or "")
    except ValueError as exc:
        raise ArtefactError("%s: not JSON at line %s (%s); it is the summary gpu_node_facts and "
                            "gpu_bundle_node write on the node - collect the node again" % (
                                name, getattr(exc, "lineno", "?"), getattr(exc, "msg", exc)))
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        raise ArtefactError("%s: no %s list - not the summary gpu_node_facts and gpu_bundle_node "
                            "write; collect the node again" % (name, key))
    return doc


def parse_cdi_specs(text, name=CDI_SPECS):
    """The fact cdi_specs: {dirs: [{dir, state, specs}], specs: [{file, cdiVersion, kind,
    device_nodes, devices: [{name, device_nodes}]} or {file, error}], specs_left_out, root}."""
    doc = _summary(text, name, "specs")
    out = {k: doc[k] for k in ("specs_left_out", "root") if k in doc}
    out["dirs"] = [d for d in doc.get("dirs") or [] if isinstance(d, dict)] if isinstance(doc.get("dirs"), list) else []
    out["specs"] = [s for s in doc["specs"] if isinstance(s, dict)]
    for spec in out["specs"]:
        spec["devices"] = [d for d in spec.get("devices") or [] if isinstance(d, dict)] \
            if isinstance(spec.get("devices"), list) else []
    return out


def parse_container_devices(text, name=CONTAINER_DEVICES):
    """The fact container_devices: [{id, pod, container, devices (its /dev/nvidia* nodes),
    cdi_devices (the CDI devices its CRI config kept, when it has the field)}]."""
    return [c for c in _summary(text, name, "containers")["containers"] if isinstance(c, dict)]


# --------------------------------------------------------------------------- the facts
def node_texts(files, index=None):
    """(texts {name: str}, smi_rc) of one node's artefacts, as facts_from_artefacts takes them.

    `files`: {name: bytes or str} (a bundle's ``nodes/<node>/`` files, or what the collector
    node.collect gathered); `index`: their entries ({name: entry}, bundle.json's). A command that
    ran and failed has no file, but its entry keeps its exit code and output - nvidia-smi's and
    crictl's failure words are facts too (driver_error, cri_error); smi_rc is the query's exit
    status then (1 when it gave none), else None (judged by the text)."""
    texts = {}
    smi_rc = None
    for name in ARTEFACTS:
        data = files.get(name)
        if data is not None:
            texts[name] = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            continue
        entry = (index or {}).get(name) or {}
        if entry.get("status") == "failed" and entry.get("output") is not None:
            if name == "nvidia-smi-query.csv":
                texts[name] = entry["output"]
                smi_rc = entry.get("rc") if isinstance(entry.get("rc"), int) else 1
            elif name == "crictl-info.json":
                texts[name] = entry["output"] or entry.get("reason") or "crictl info failed"
    return texts, smi_rc


def facts_from_artefacts(files, smi_rc=None, resources=None):
    """Node facts (the contract's keys) from raw artefact texts keyed by bundle file name.

    `files`: {"nvidia-smi.txt": text, "nvidia-smi-query.csv": text, "crictl-info.json": text,
    "containerd-config-dump.toml": text, "device-plugins.txt": text, "dmesg.txt": text,
    "fabric-manager.txt": text, "mig-lgip.txt": text, "mig-lgipp.txt": text,
    "containerd.log": text, "cdi-specs.json": text, "container-devices.json": text}; an absent name
    is an artefact not collected.
    `smi_rc`: the query's exit status when known (live); a bundle judges by the text."""
    facts = {}
    query = files.get("nvidia-smi-query.csv")
    plain = files.get("nvidia-smi.txt")
    if query is not None:
        failure = smi_failure(query)
        if smi_rc not in (None, 0):
            facts["driver_ok"] = False
            facts["driver_error"] = failure or _first_lines(query, 4) or "exit status %s" % smi_rc
        elif failure and not any(line.strip()[:1].isdigit() for line in query.splitlines()):
            facts["driver_ok"] = False
            facts["driver_error"] = failure
        else:
            gpus = parse_smi_query(query, "nvidia-smi-query.csv")
            if gpus:
                facts["driver_ok"] = True
                facts["gpus"] = gpus
                facts["driver_version"] = gpus[0]["driver_version"]
            elif smi_rc == 0:
                facts["driver_ok"] = False
                facts["driver_error"] = "nvidia-smi --query-gpu listed no GPU"
    if plain is not None and plain.strip():
        read = parse_smi_text(plain)
        if "driver_ok" not in facts:
            if read.get("driver_error"):
                facts["driver_ok"] = False
                facts["driver_error"] = read["driver_error"]
            elif read.get("driver_version"):
                facts["driver_ok"] = True
        if read.get("driver_version") and "driver_version" not in facts:
            facts["driver_version"] = read["driver_version"]
    info = files.get("crictl-info.json")
    running = parse_crictl_info(info, "crictl-info.json") if info is not None else {}
    dump = files.get("containerd-config-dump.toml")
    configured = parse_config_dump(dump, "containerd-config-dump.toml") if dump is not None else {}
    if running.get("cri_error"):
        facts["cri_error"] = running["cri_error"]
    if "runtimes_running" in running:
        facts["runtimes_running"] = running["runtimes_running"]
        facts["runtimes_loaded"] = list(running["runtimes_running"])
    if "runtimes_configured" in configured:
        facts["runtimes_configured"] = configured["runtimes_configured"]
    if running.get("default_runtime"):
        facts["default_runtime"] = running["default_runtime"]
    if configured.get("default_runtime_configured"):
        facts["default_runtime_configured"] = configured["default_runtime_configured"]
        if "default_runtime" not in facts and "runtimes_running" not in facts:
            facts["default_runtime"] = configured["default_runtime_configured"]
    if "cdi_enabled" in running:
        facts["cdi_enabled"] = running["cdi_enabled"]
    elif running.get("cdi_absent"):
        facts["cdi_enabled"] = False
    elif "cdi_enabled_configured" in configured:
        facts["cdi_enabled"] = configured["cdi_enabled_configured"]
    if "cdi_spec_dirs" in running:
        facts["cdi_spec_dirs"] = running["cdi_spec_dirs"]
    if running.get("runtime_binaries"):
        facts["runtime_binaries"] = running["runtime_binaries"]
    if "runtimes_running" in facts and "runtimes_configured" in facts:
        differ = set(facts["runtimes_running"]) != set(facts["runtimes_configured"])
        if running.get("default_runtime") and configured.get("default_runtime_configured"):
            differ = differ or running["default_runtime"] != configured["default_runtime_configured"]
        facts["restart_pending"] = differ
    log = files.get("containerd.log")
    if log is not None:
        facts["containerd_errors"] = containerd_errors(log)
    sockets = files.get("device-plugins.txt")
    if sockets is not None:
        facts["device_plugin_sockets"] = plugin_sockets(sockets.split(), resources)
        facts["device_plugin_socket"] = bool(facts["device_plugin_sockets"])
    kernel = files.get("dmesg.txt")
    if kernel is not None:
        facts["kernel_xid"] = kernel_nvrm_lines(kernel)
    fabric = files.get("fabric-manager.txt")
    if fabric is not None:
        state = parse_fabric_manager(fabric)
        if state:
            facts["fabric_manager"] = state
    for key, fname in (("mig_lgip", "mig-lgip.txt"), ("mig_lgipp", "mig-lgipp.txt")):
        if files.get(fname) is not None and files[fname].strip():
            facts[key] = files[fname]
    if files.get(CDI_SPECS) is not None:
        facts["cdi_specs"] = parse_cdi_specs(files[CDI_SPECS])
    if files.get(CONTAINER_DEVICES) is not None:
        facts["container_devices"] = parse_container_devices(files[CONTAINER_DEVICES])
    return facts


def _first_lines(text, count):
    lines = [line.rstrip() for line in (text or "").strip().splitlines() if line.strip()]
    return "\n".join(lines[:count])
