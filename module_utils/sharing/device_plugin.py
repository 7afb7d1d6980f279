# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the NVIDIA device plugin v0.20.0 makes of a sharing config, for a node of G
identical GPUs of V GiB: does it start, which strategy is active, what the node
advertises under which names, failRequestsGreaterThanOne, the MPS limits.

Pure Python (PyYAML), shared by the timeslicing_slots and gpu_sharing_plan modules
and the grader. Every rule follows the plugin's source at tag v0.20.0
(github.com/NVIDIA/k8s-device-plugin, commit 1b826acc); the file and function is
named beside each rule. The plugin reads the config with sigs.k8s.io/yaml (YAML
1.1 -> JSON -> encoding/json), so type errors are Go's json errors, and a refusal
quotes the plugin's own message chain as its log would show it.
"""

import math
import re

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.files import parse_mode, read_text, write_text

# HAS_YAML and YAML_IMPORT_ERROR are re-exported for the modules that check them
from ansible.module_utils.lab.yaml_load import HAS_YAML, YAML_IMPORT_ERROR, yaml  # noqa: F401 pylint: disable=unused-import

DEFAULT_RESOURCE = "nvidia.com/gpu"
PLUGIN_VERSION = "v0.20.0"
PREFIX = "nvidia.com"               # api/config/v1/consts.go ResourceNamePrefix
SHARED_SUFFIX = ".shared"           # consts.go DefaultSharedResourceNameSuffix
MAX_NAME = 63                       # consts.go MaxResourceNameLength
MPS_MAX_REPLICAS = 48               # cmd/mps-control-daemon/mps/device.go maxClients (>= 7.5)
MPS_MAX_REPLICAS_PRE_VOLTA = 16
# k8s.io/apimachinery/pkg/util/validation IsDNS1123Subdomain (vendored in v0.20.0)
_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_DNS1123_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is '%s')" % _DNS1123_SUBDOMAIN)

# The wrappers the plugin puts around a config error, innermost last
# (cmd/nvidia-device-plugin/main.go run/startPlugins, api/config/v1/config.go NewConfig,
# parseConfig, parseConfigFrom; sigs.k8s.io/yaml unmarshal/jsonUnmarshal).
_LOAD_CHAIN = ("error starting plugins: unable to load config: unable to parse config file: "
               "error parsing config file: ")
_JSON_CHAIN = "unmarshal error: error unmarshaling JSON: while decoding JSON: "


class SlotsError(LabError):
    """A refusal. ``message`` is what the user reads; ``plugin_message`` the plugin's own."""

    def __init__(self, message, mistake=None, line=None, plugin_message=None):
        self.message = message
        self.mistake = mistake
        self.line = line
        self.plugin_message = plugin_message
        super().__init__(message)


class PluginRefusal(SlotsError):
    """The device plugin itself would refuse to start with this config."""

    def __init__(self, plugin_message, hint=None, chain=_LOAD_CHAIN + _JSON_CHAIN):
        text = "the NVIDIA device plugin %s refuses this config: %s%s" % (
            PLUGIN_VERSION, chain, plugin_message)
        if hint:
            text += ". " + hint
        super().__init__(text, plugin_message=plugin_message)


class _JsonError(Exception):
    """An error encoding/json returns (a custom UnmarshalJSON's or a type error)."""

    def __init__(self, message, hint=None, type_error=None):
        self.message = message
        self.hint = hint
        self.type_error = type_error  # (kind, go type) of an UnmarshalTypeError
        super().__init__(message)

    def in_field(self, struct, field):
        """decode.go addErrorContext: a type error gains the outer struct's field path."""
        if self.type_error:
            self.message = "json: cannot unmarshal %s into Go struct field %s.%s of type %s" % (
                self.type_error[0], struct, field, self.type_error[1])
            self.type_error = None
        return self


def config_from_manifest(text, key="any", source="manifest"):
    """Return the config string held in a ConfigMap manifest's data[key]."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SlotsError("%s is not valid YAML%s: %s" % (
            source, " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark else "",
            getattr(exc, "problem", None) or exc), line=mark.line + 1 if mark else None)
    maps = [d for d in docs if isinstance(d, dict) and d.get("kind") == "ConfigMap"]
    if not maps:
        raise SlotsError("%s holds no ConfigMap (kinds found: %s)" % (
            source, ", ".join(str(d.get("kind")) for d in docs if isinstance(d, dict)) or "none"))
    data = maps[0].get("data")
    metadata = maps[0].get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SlotsError("%s: the ConfigMap's data is a %s; it must be a mapping of keys to "
                         "strings (data: {%s: |- ...})" % (source, _yaml_kind(data), key),
                         line=_line_of(text, "data"))
    if key not in data:
        raise SlotsError("%s: ConfigMap %s has no data.%s (keys: %s)" % (
            source, name, key, ", ".join(str(k) for k in data) or "none"))
    value = data[key]
    if isinstance(value, (dict, list)):
        raise SlotsError(
            "%s: data.%s is written as a YAML %s, but ConfigMap data values must be strings "
            "(common mistake 2); the API server rejects it. Fix: make it a block string, "
            "`%s: |-` followed by the config indented below it."
            % (source, key, "mapping" if isinstance(value, dict) else "list", key),
            mistake="data-any-mapping", line=_line_of(text, key))
    if not isinstance(value, str):
        raise SlotsError("%s: data.%s must be a string, found %s" % (source, key, _yaml_kind(value)),
                         line=_line_of(text, key))
    return value


def _yaml_kind(value):
    return {dict: "mapping", list: "list", str: "string", bool: "boolean", int: "number",
            float: "number", type(None): "null"}.get(type(value), type(value).__name__)


def _line_of(text, key):
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip().startswith(key + ":"):
            return number
    return None


# ---------------------------------------------------------------------------------------
# Reading the config as the plugin does: go-yaml v2 (YAML 1.1) -> JSON -> encoding/json.

_LOADER = []


def _go_yaml_loader():
    """PyYAML tuned to go-yaml v2's YAML 1.1: y/n are booleans, timestamps stay strings."""
    if not _LOADER:
        class GoYamlLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
            pass

        GoYamlLoader.yaml_implicit_resolvers = {
            k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
            for k, v in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()}
        GoYamlLoader.add_implicit_resolver(
            "tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
        GoYamlLoader.add_constructor("tag:yaml.org,2002:bool", _go_bool)
        _LOADER.append(GoYamlLoader)
    return _LOADER[0]


def _go_bool(loader, node):
    return node.value in ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")


def _to_json(value):
    """sigs.k8s.io/yaml's YAML->JSON step: keys become strings, whole floats print as ints."""
    if isinstance(value, dict):
        return {_key(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def _key(k):
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, float) and k.is_integer():
        return str(int(k))
    return "null" if k is None else str(k)


def _kind(value):
    """encoding/json's name for a JSON value in its type errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _type_error(value, gotype):
    kind = _kind(value)
    if kind == "number" and gotype == "int" and isinstance(value, float):
        kind = "number %s" % _go_number(value)
    return _JsonError("json: cannot unmarshal %s into Go value of type %s" % (kind, gotype),
                      type_error=(kind, gotype))


def _go_number(value):
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _decode_int(value):
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise _type_error(value, "int")
    return value


def _decode_bool(value, default=False):
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _type_error(value, "bool")
    return value


def _object(value, gotype="map[string]json.RawMessage"):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _type_error(value, gotype)
    return value


def resource_name(raw):
    """api/config/v1/resources.go NewResourceName: prefix, length, DNS-1123 subdomain."""
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        raise _type_error(raw, "string")
    name = raw if raw.startswith(PREFIX + "/") else PREFIX + "/" + raw
    if len(name) > MAX_NAME:
        raise _JsonError("fully-qualified resource name must be %d characters or less: %s"
                         % (MAX_NAME, name))
    short = name.split("/", 1)[1]
    errors = []
    if len(short) > 253:
        errors.append("must be no more than 253 characters")
    if not re.fullmatch(_DNS1123_SUBDOMAIN, short):
        errors.append(_DNS1123_MSG)
    if errors:
        raise _JsonError("incorrect format for resource name '%s': [%s]" % (name, " ".join(errors)))
    return name


_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


def _is_device_ref(ref):
    """replicas.go IsGPUIndex / IsMigIndex / IsUUID."""
    if re.fullmatch(r"[0-9]+", ref) or re.fullmatch(r"[0-9]+:[0-9]+", ref):
        return True
    if ref.startswith("GPU-"):
        return bool(_UUID.match(ref[4:]))
    if ref.startswith("MIG-"):
        rest = ref[4:]
        if _UUID.match(rest):
            return True
        parts = rest.split("/", 2)
        return (len(parts) == 3 and parts[0].startswith("GPU-") and bool(_UUID.match(parts[0][4:]))
                and all(re.fullmatch(r"[0-9]+", p) for p in parts[1:]))
    return False


def _decode_devices(value):
    """replicas.go ReplicatedDevices.UnmarshalJSON: "all", a count > 0, or a list."""
    if value is None or isinstance(value, str):
        text = value or ""
        if text != "all":
            raise _JsonError("devices set as '%s' but the only valid string input is 'all'" % text)
        return "all"
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise _JsonError("devices set as '%d' but a count of devices must be > 0" % value)
        return value
    if isinstance(value, list):
        refs = []
        for item in value:
            if isinstance(item, int) and not isinstance(item, bool) and item >= 0:
                refs.append(str(item))
                continue
            text = item if isinstance(item, str) else ""
            if isinstance(item, str) and _is_device_ref(item):
                refs.append(item)
                continue
            raise _JsonError("unsupported type for device in devices list: %s, string" % text)
        return refs
    raise _JsonError("unrecognized type for devices spec: %s" % _json_text(value))


def _json_text(value):
    import json
    return json.dumps(value, separators=(",", ":"))


def _decode_entry(raw):
    """replicas.go ReplicatedResource.UnmarshalJSON, in its order: name, devices, replicas, rename."""
    entry = _object(raw)
    if "name" not in entry:
        raise _JsonError("no resource name specified")
    name = resource_name(entry["name"])
    devices = _decode_devices(entry.get("devices", "all"))
    if "replicas" not in entry:
        raise _JsonError("no replicas specified")
    replicas = _decode_int(entry["replicas"])
    if replicas < 2:
        raise _JsonError("number of replicas must be >= 2",
                         hint="Fix: replicas is how many Pods share one GPU; 1 shares nothing - "
                              "leave the resource out of the list instead")
    rename = resource_name(entry["rename"]) if "rename" in entry else ""
    return {"name": name, "devices": devices, "replicas": replicas, "rename": rename}


def _decode_replicated(raw):
    """replicas.go ReplicatedResources.UnmarshalJSON (keys are case-sensitive here)."""
    section = _object(raw)
    rename_by_default = _decode_bool(section.get("renameByDefault"))
    fail = None
    if "failRequestsGreaterThanOne" in section and section["failRequestsGreaterThanOne"] is not None:
        fail = _decode_bool(section["failRequestsGreaterThanOne"])
    if "resources" not in section:
        raise _JsonError("no resources specified")
    resources = section["resources"]
    if resources is not None and not isinstance(resources, list):
        raise _type_error(resources, "[]v1.ReplicatedResource")
    entries = [_decode_entry(item) for item in resources or []]
    if not entries:
        raise _JsonError("no resources specified")
    for entry in entries:
        if rename_by_default and not entry["rename"]:
            entry["rename"] = entry["name"] + SHARED_SUFFIX
    return {"renameByDefault": rename_by_default, "failRequestsGreaterThanOne": fail,
            "resources": entries}


def _field(obj, name):
    """encoding/json's struct field match: exact key, else case-insensitive; last one wins."""
    found, value = False, None
    for key in sorted(obj):  # sigs.k8s.io/yaml marshals the map: keys arrive sorted
        if key.lower() == name.lower():
            found, value = True, obj[key]
    if name in obj:
        found, value = True, obj[name]
    return found, value


def parse_config(config_text):
    """The plugin's parseConfigFrom + NewConfig's MPS default: a dict, or PluginRefusal."""
    try:
        docs = list(yaml.load_all(config_text, Loader=_go_yaml_loader()))  # nosec - a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise PluginRefusal("error converting YAML to JSON: yaml: %s%s" % (
            "line %d: " % (mark.line + 1) if mark else "", problem),
            chain=_LOAD_CHAIN + "unmarshal error: ")
    doc = _to_json(docs[0] if docs else None)   # go-yaml reads the first document only
    if doc is not None and not isinstance(doc, dict):
        raise PluginRefusal("json: cannot unmarshal %s into Go value of type v1.Config" % _kind(doc))
    doc = doc or {}
    config = {"version": "", "sharing": {"timeSlicing": None, "mps": None},
              "mig_strategy": None, "resources_set": False}
    saved = None  # encoding/json keeps the first type error and goes on
    try:
        found, flags = _field(doc, "flags")
        if found and flags is not None:
            if not isinstance(flags, dict):
                saved = saved or _struct_error(flags, "flags", "v1.Flags")
            else:
                got, mig = _field(flags, "migStrategy")
                if got and mig is not None:
                    config["mig_strategy"] = _scalar_string(mig)
        found, resources = _field(doc, "resources")
        if found and resources is not None:
            if not isinstance(resources, dict):
                saved = saved or _struct_error(resources, "resources", "v1.Resources")
            else:
                for kind in ("gpus", "mig"):
                    got, items = _field(resources, kind)
                    for item in (items if isinstance(items, list) else []):
                        item = _object(item)
                        if "pattern" not in item:
                            raise _JsonError("resources must have a 'pattern' field set")
                        if "name" not in item:
                            raise _JsonError("resources must have a 'name' field set")
                        resource_name(item["name"])
                        config["resources_set"] = True
        found, sharing = _field(doc, "sharing")
        if found and sharing is not None:
            if not isinstance(sharing, dict):
                saved = saved or _struct_error(sharing, "sharing", "v1.Sharing")
            else:
                for key in ("mps", "timeSlicing"):   # "mps" sorts before "timeSlicing"
                    got, section = _field(sharing, key)
                    if not got or (key == "mps" and section is None):
                        continue   # a null mps leaves the pointer nil; timeSlicing is a struct
                    try:
                        config["sharing"][key] = _decode_replicated(section)
                    except _JsonError as exc:
                        raise exc.in_field("Sharing", "sharing." + key)
        found, version = _field(doc, "version")
        if found and version is not None:
            config["version"] = _scalar_string(version)
    except _JsonError as exc:
        raise PluginRefusal(exc.message, hint=exc.hint)
    if saved is not None:
        raise PluginRefusal(saved)
    if config["version"] == "":
        config["version"] = "v1"
    if config["version"] != "v1":
        raise PluginRefusal("unknown version: %s" % config["version"], chain=_LOAD_CHAIN,
                            hint="Fix: write `version: v1` (or leave it out)")
    mps = config["sharing"]["mps"]
    if mps is not None and mps["failRequestsGreaterThanOne"] is None:
        mps["failRequestsGreaterThanOne"] = True   # config.go NewConfig: the historical MPS default
    return config


def _scalar_string(value):
    """sigs.k8s.io/yaml turns a YAML scalar into the string a string field expects."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _go_number(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return value
    raise _type_error(value, "string")


def _struct_error(value, field, gotype):
    return "json: cannot unmarshal %s into Go struct field Config.%s of type %s" % (
        _kind(value), field, gotype)


def _is_replicated(section):
    return section is not None and any(r["replicas"] > 1 for r in section["resources"])


def plugin_view(config_text, physical_gpus, vram_per_gpu_gib, resource=DEFAULT_RESOURCE,
                mig_strategy="none", compute_capability="8.0", memory_total_mib=None):
    """What the plugin starts with and advertises on a node of ``physical_gpus`` devices that
    it exposes as ``resource`` (each ``vram_per_gpu_gib`` GiB). ``memory_total_mib`` is NVML's
    memory.total as nvidia-smi prints it (MiB); when given, the MPS limit is computed from it
    (the plugin divides NVML's total bytes, not the card's nominal size). Raises SlotsError."""
    _check_hardware(physical_gpus, vram_per_gpu_gib)
    if memory_total_mib is not None and (isinstance(memory_total_mib, bool) or
                                         not isinstance(memory_total_mib, int) or
                                         memory_total_mib < 1):
        raise SlotsError("memory_total_mib must be a whole number of MiB above 0 (NVML's "
                         "memory.total as `nvidia-smi --query-gpu=memory.total --format=csv` "
                         "prints it, e.g. 81559 for an H100 80GB HBM3), got %r"
                         % (memory_total_mib,))
    config = parse_config(config_text)
    warnings = []
    if config["resources_set"]:
        warnings.append("Customizing the 'resources' field is not yet supported in the config. "
                        "Ignoring...")
    sharing = config["sharing"]
    # main.go:356 spec.DisableResourceNamingInConfig (config.go, replicas.go disableResoureRenaming)
    for key in ("timeSlicing", "mps"):
        section = sharing[key]
        if section is None:
            continue
        renamed = devices = False
        for entry in section["resources"]:
            if not section["renameByDefault"] and entry["rename"]:
                renamed, entry["rename"] = True, ""
            if section["renameByDefault"] and entry["rename"] != entry["name"] + SHARED_SUFFIX:
                renamed, entry["rename"] = True, entry["name"] + SHARED_SUFFIX
            if entry["devices"] != "all":
                devices, entry["devices"] = True, "all"
        if renamed:
            warnings.append("Setting the 'rename' field in sharing.%s.resources is not yet "
                            "supported in the config. Ignoring..." % key)
        if devices:
            warnings.append("Customizing the 'devices' field in sharing.%s.resources is not yet "
                            "supported in the config. Ignoring..." % key)
    # sharing.go SharingStrategy / ReplicatedResources
    if _is_replicated(sharing["mps"]):
        strategy = "mps"
    elif _is_replicated(sharing["timeSlicing"]):
        strategy = "time-slicing"
    else:
        strategy = "none"
    active = sharing["mps"] if sharing["mps"] is not None else sharing["timeSlicing"]
    mig = config["mig_strategy"] or mig_strategy
    # main.go validateFlags
    if strategy == "mps" and mig == "mixed":
        raise PluginRefusal("using --mig-strategy=mixed is not supported with MPS",
                            chain="error starting plugins: unable to validate flags: ",
                            hint="Fix: MPS needs mig-strategy none or single")
    if mig not in ("none", "single", "mixed"):
        raise PluginRefusal("unknown MIG strategy: %s" % mig,
                            chain="error starting plugins: unable to validate flags: ")
    # internal/rm/device_map.go updateDeviceMapWithReplicas
    try:
        resource = resource_name(resource if resource is not None else DEFAULT_RESOURCE)
    except _JsonError as exc:
        raise SlotsError("resource %r is not a resource name the device plugin can advertise: %s"
                         % (resource, exc.message))
    advertised = {resource: physical_gpus}
    replicas = 1
    if active is not None:
        entries = [e for e in active["resources"] if e["name"] == resource]
        if entries:
            del advertised[resource]
            for entry in entries:
                target = entry["rename"] or entry["name"]
                per_gpu = max(advertised.get(target, 0) // physical_gpus, entry["replicas"])
                advertised[target] = per_gpu * physical_gpus
            replicas = max(e["replicas"] for e in entries)
        others = sorted({e["name"] for e in active["resources"]} - {resource})
        if others:
            warnings.append("entries for %s match no device of this node (it exposes %s); they "
                            "change nothing here" % (", ".join(others), resource))
    fail = bool(active and active["failRequestsGreaterThanOne"])
    vram = vram_per_gpu_gib
    mps_limit = mps_threads = None
    if strategy == "mps" and replicas > 1:
        if resource.startswith(PREFIX + "/mig-"):
            warnings.append("MPS sharing is not supported for MIG devices; skipping daemon creation")
        ceiling = MPS_MAX_REPLICAS if _cc_at_least(compute_capability, 7, 5) else \
            MPS_MAX_REPLICAS_PRE_VOLTA
        if replicas > ceiling:
            raise PluginRefusal(
                "invalid MPS configuration: invalid device maximum allowed replicas exceeded: "
                "%d > %d" % (replicas, ceiling), chain="error getting daemons: ",
                hint="(the MPS control daemon refuses it; at most %d clients per GPU)" % ceiling)
        # cmd/mps-control-daemon/mps/daemon.go perDevicePinnedDeviceMemoryLimits
        # NVML total bytes // R // MiB == (total bytes // MiB) // R, so the MiB nvidia-smi
        # prints (floor of bytes / MiB) gives the plugin's exact number
        total_bytes = int(vram * 1024 ** 3) if memory_total_mib is None else \
            memory_total_mib * 1024 * 1024
        mps_limit = total_bytes // replicas // 1024 // 1024
        mps_threads = 100 // replicas
    if strategy == "time-slicing" and replicas > 1:
        guaranteed, shared, isolation = 0, vram, "none"
    elif strategy == "mps" and replicas > 1:
        guaranteed, shared, isolation = _num(round(mps_limit / 1024, 2)), 0, "memory-limit"
    else:
        guaranteed, shared, isolation = vram, 0, "exclusive"
    name = next((n for n in advertised if n == resource or n.startswith(resource)), resource)
    return {
        "strategy": strategy,
        "physical_gpus": physical_gpus,
        "replicas": replicas,
        "advertised": advertised.get(name, 0),
        "resource_name": name,
        "advertised_resources": advertised,
        "vram_per_gpu_gib": _num(vram),
        "vram_guaranteed_per_slot_gib": _num(guaranteed),
        "vram_shared_per_gpu_gib": _num(shared),
        "isolation": isolation,
        "fail_requests_greater_than_one": fail,
        "mps_memory_limit_mib": mps_limit,
        "mps_active_thread_percentage": mps_threads,
        "mig_strategy": mig,
        "plugin_warnings": warnings,
    }


def _cc_at_least(cc, major, minor):
    try:
        parts = [int(p) for p in str(cc).lstrip("v").split(".")[:2]]
    except ValueError:
        return True
    parts += [0] * (2 - len(parts))
    return tuple(parts) >= (major, minor)


def _check_hardware(physical_gpus, vram_per_gpu_gib):
    if isinstance(physical_gpus, bool) or not isinstance(physical_gpus, int) or physical_gpus < 1:
        raise SlotsError("physical_gpus must be a whole number of at least 1 (GPUs in the node), "
                         "got %r" % (physical_gpus,))
    if isinstance(vram_per_gpu_gib, bool) or not isinstance(vram_per_gpu_gib, (int, float)) or \
            not math.isfinite(vram_per_gpu_gib) or vram_per_gpu_gib <= 0:
        raise SlotsError("vram_per_gpu_gib must be a finite number above 0 (memory of one GPU in "
                         "GiB, e.g. 40 for an A100 40GB), got %r" % (vram_per_gpu_gib,))


def slot_table(config_text, physical_gpus, vram_per_gpu_gib, resource=DEFAULT_RESOURCE, **kwargs):
    """The slot table (plugin_view); kept under the name the grader and lab use."""
    return plugin_view(config_text, physical_gpus, vram_per_gpu_gib, resource, **kwargs)


def _num(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return round(value, 2) if isinstance(value, float) else value


SLOT_KEYS = ["PHYSICAL_GPUS", "REPLICAS", "ADVERTISED", "VRAM_PER_GPU_GIB",
             "VRAM_GUARANTEED_PER_SLOT_GIB", "VRAM_SHARED_PER_GPU_GIB", "ISOLATION"]


def slots_report(table):
    return "".join("%s=%s\n" % (key, table[key.lower()]) for key in SLOT_KEYS)


def advertised_slots(module):
    """timeslicing_slots: the slot table for the config of module.params (src's ConfigMap or
    config), written to dest as the seven-line report. The module's result. Raises SlotsError
    (the config) or LabFileError (src, dest, mode) - nothing is written before either."""
    p = module.params
    if p["dest"]:
        parse_mode(p["mode"])
    text = p["config"]
    if p["src"]:
        text = config_from_manifest(read_text(p["src"], "src"), p["key"], source=p["src"])
    vram = p["vram_per_gpu_gib"]
    table = slot_table(text, p["physical_gpus"],
                       int(vram) if math.isfinite(vram) and vram.is_integer() else vram,
                       p["resource"], compute_capability=p["compute_capability"],
                       memory_total_mib=p["memory_total_mib"])
    result = dict(table, changed=False, report=slots_report(table))
    result["msg"] = ("%s slots on %s GPUs; guaranteed memory per slot %s GiB; each GPU's %s GiB shared "
                     "by its %s slots; isolation %s." % (
                         table["advertised"], table["physical_gpus"], table["vram_guaranteed_per_slot_gib"],
                         table["vram_shared_per_gpu_gib"], table["replicas"], table["isolation"]))
    if p["dest"]:
        result.update(write_text(module, p["dest"], result["report"], mode=p["mode"],
                                 backup=p["backup"], raise_errors=True))
    return result
