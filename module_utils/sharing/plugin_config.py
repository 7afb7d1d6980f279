# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA device plugin v0.20.0's sharing config read as the plugin reads it: the ConfigMap's
data value, then sigs.k8s.io/yaml (go-yaml v2, YAML 1.1 -> JSON -> encoding/json), so type
errors are Go's json errors and a refusal quotes the plugin's own message chain as its log
would show it. What the plugin then makes of the config is device_plugin.py.
"""

import math
import re

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.yaml_load import yaml

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


class JsonError(Exception):
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
    return JsonError("json: cannot unmarshal %s into Go value of type %s" % (kind, gotype),
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
        raise JsonError("fully-qualified resource name must be %d characters or less: %s"
                        % (MAX_NAME, name))
    short = name.split("/", 1)[1]
    errors = []
    if len(short) > 253:
        errors.append("must be no more than 253 characters")
    if not re.fullmatch(_DNS1123_SUBDOMAIN, short):
        errors.append(_DNS1123_MSG)
    if errors:
        raise JsonError("incorrect format for resource name '%s': [%s]" % (name, " ".join(errors)))
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
            raise JsonError("devices set as '%s' but the only valid string input is 'all'" % text)
        return "all"
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise JsonError("devices set as '%d' but a count of devices must be > 0" % value)
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
            raise JsonError("unsupported type for device in devices list: %s, string" % text)
        return refs
    raise JsonError("unrecognized type for devices spec: %s" % _json_text(value))


def _json_text(value):
    import json
    return json.dumps(value, separators=(",", ":"))


def _decode_entry(raw):
    """replicas.go ReplicatedResource.UnmarshalJSON, in its order: name, devices, replicas, rename."""
    entry = _object(raw)
    if "name" not in entry:
        raise JsonError("no resource name specified")
    name = resource_name(entry["name"])
    devices = _decode_devices(entry.get("devices", "all"))
    if "replicas" not in entry:
        raise JsonError("no replicas specified")
    replicas = _decode_int(entry["replicas"])
    if replicas < 2:
        raise JsonError("number of replicas must be >= 2",
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
        raise JsonError("no resources specified")
    resources = section["resources"]
    if resources is not None and not isinstance(resources, list):
        raise _type_error(resources, "[]v1.ReplicatedResource")
    entries = [_decode_entry(item) for item in resources or []]
    if not entries:
        raise JsonError("no resources specified")
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
                            raise JsonError("resources must have a 'pattern' field set")
                        if "name" not in item:
                            raise JsonError("resources must have a 'name' field set")
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
                    except JsonError as exc:
                        raise exc.in_field("Sharing", "sharing." + key)
        found, version = _field(doc, "version")
        if found and version is not None:
            config["version"] = _scalar_string(version)
    except JsonError as exc:
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


def is_replicated(section):
    return section is not None and any(r["replicas"] > 1 for r in section["resources"])
