# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""DRA's side of a sharing plan: for the card and the choice a plan of plans.py made (time-slicing
R, MPS R, a MIG layout), what NVIDIA's DRA driver for GPUs publishes as devices in the node's
ResourceSlice, what a claim must look like to get them, how Pods share, and how that differs
from the device plugin's view - one line per difference.

The driver is sigs.k8s.io/dra-driver-nvidia-gpu v0.4.1, its kubelet plugin gpu-kubelet-plugin
(the lab's lab-node-2, docs/dra.md). Every rule names its source below (SOURCES: paths in that
module at v0.4.1, or in the Kubernetes modules the lab's v1.36.3 builds from); each plan lists the
ones it used. What the slice looks like was checked against the slice the lab recorded from
lab-node-2 (tests/diagnosis_corpus/dra-lab-node-2/resourceslices.json). Modelled: whole GPUs and
static MIG (a layout laid out beforehand, the driver's default); DynamicMIG (alpha) is refused.
"""

from ansible.module_utils.sharing.cards import PlanError, product_name

DRA_DRIVER = "gpu.nvidia.com"                                   # the driver's name in a slice
DRA_DRIVER_VERSION = "v0.4.1"                                   # toolchain/dra-driver-nvidia-gpu/go.mod
DRA_MODULE = "sigs.k8s.io/dra-driver-nvidia-gpu"
CONFIG_API = "resource.nvidia.com/v1beta1"                      # api/nvidia.com/resource/v1beta1/api.go:27-31
GPU_CLASS, MIG_CLASS = "gpu.nvidia.com", "mig.nvidia.com"       # the chart's DeviceClasses
GPU_EXTENDED_RESOURCE = "nvidia.com/gpu"                        # gpu.nvidia.com's extendedResourceName
RESERVED_FOR_MAX = 256                                          # k8s.io/api resource/v1 types.go:1671
INTERVALS = ("Default", "Short", "Medium", "Long")              # api/nvidia.com/resource/v1beta1/sharing.go:34-39
# pkg/featuregates/featuregates.go:87-151: every gate of v0.4.1 and its default
GATES = {"TimeSlicingSettings": False, "MPSSupport": False, "IMEXDaemonsWithDNSNames": True,
         "PassthroughSupport": False, "DynamicMIG": False, "NVMLDeviceHealthCheck": False,
         "ComputeDomainCliques": True, "CrashOnNVLinkFabricErrors": True, "DeviceMetadata": False}
# go-nvlib v0.11.0 pkg/nvlib/device/device.go:74-97 GetArchitectureAsString, by the table's
# compute capability (NVML's architecture of those chips)
ARCHITECTURES = {"8.0": "Ampere", "9.0": "Hopper", "10.0": "Blackwell"}
# attributes whose values only the node has (deviceinfo.go:152-198, mig.go:137-185)
GPU_NODE_ATTRIBUTES = ["uuid", "brand", "driverVersion", "cudaDriverVersion",
                       "resource.kubernetes.io/pciBusID", "resource.kubernetes.io/pcieRoot (when known)",
                       "addressingMode (when the driver reports one)"]
MIG_NODE_ATTRIBUTES = ["uuid", "parentUUID"] + GPU_NODE_ATTRIBUTES[1:]

_P = DRA_MODULE + "@" + DRA_DRIVER_VERSION + " "
_K = "k8s.io/api v0.36.3 resource/v1/types.go"
SOURCES = {
    "gpu_device": _P + "cmd/gpu-kubelet-plugin/nvlib.go:302-313 (a GPU not in MIG mode is one "
                       "device), deviceinfo.go:106-108 (its name gpu-<minor>), :152-207 (attributes, "
                       "capacity), types.go:27 (type gpu)",
    "gpu_memory": _P + "cmd/gpu-kubelet-plugin/partitions.go:34-43 (capacity memory: NVML's memory "
                       "total in bytes, nvlib.go:477-488)",
    "mig_device": _P + "cmd/gpu-kubelet-plugin/nvlib.go:302-324 (MIG mode on: its MIG devices, no "
                       "whole GPU), mig.go:111-114 (name gpu-<minor>-mig-<profile without dots>-<GI "
                       "profile ID>-<placement start>), :247-260 (RFC 1123: '+' becomes '-'), "
                       "deviceinfo.go:209-232 and mig.go:116-185 (attributes; capacity from the GI "
                       "profile and memorySlice<N> per slice of its placement), types.go:32 (type mig)",
    "startup": _P + "cmd/gpu-kubelet-plugin/nvlib.go:192-196 (devices enumerated once, when the "
                    "plugin starts)",
    "classes": _P + "deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml:4-14 "
                    "(gpu.nvidia.com: type gpu, extendedResourceName nvidia.com/gpu), "
                    "deviceclass-mig.yaml:3-10 (mig.nvidia.com: type mig, no extendedResourceName)",
    "config": _P + "api/nvidia.com/resource/v1beta1/api.go:27-31 (GpuConfig, MigDeviceConfig), "
                   "sharing.go:28-39 (strategies TimeSlicing, MPS; intervals Default, Short, "
                   "Medium, Long), :63-89 (GpuSharing, MigDeviceSharing, MpsConfig); "
                   "cmd/gpu-kubelet-plugin/device_state.go:699-767 (the claim's opaque config, per "
                   "request; GpuConfig only on type gpu, MigDeviceConfig only on MIG devices)",
    "gates": _P + "pkg/featuregates/featuregates.go:48-52, :88-101 (TimeSlicingSettings, MPSSupport: "
                  "alpha, default false), :195-222 and cmd/gpu-kubelet-plugin/main.go:211-213 "
                  "(combinations refused at start); the chart passes "
                  "featureGates as FEATURE_GATES (deployments/helm/dra-driver-nvidia-gpu/templates/"
                  "kubeletplugin.yaml:166-168; its values.yaml:93 featureGates: {} - none)",
    "gate_refusal": _P + "api/nvidia.com/resource/v1beta1/validate.go:26, :31-46 (the strategy's "
                         "gate), cmd/gpu-kubelet-plugin/device_state.go:793-796, :298-301, "
                         "driver.go:401 (the claim is not prepared)",
    "timeslice": _P + "cmd/gpu-kubelet-plugin/device_state.go:1056-1076 (only the claim's whole "
                      "GPUs), sharing.go:136-150, nvlib.go:838-875 (nvidia-smi -c DEFAULT, "
                      "compute-policy --set-timeslice <0..3>), api/nvidia.com/resource/v1beta1/gpuconfig.go:50-56 (no "
                      "timeSlicingConfig: interval Default)",
    "mps": _P + "cmd/gpu-kubelet-plugin/device_state.go:1079-1099, sharing.go:164-185 (one MPS "
                "control daemon per claim, mps-control-daemon-<claim UID>-<hash>), :215-256 (thread "
                "percentage and pinned memory only from mpsConfig), :308 (EXCLUSIVE_PROCESS), "
                ":381-400 (CUDA_MPS_PIPE_DIRECTORY, /dev/shm); templates/mps-control-daemon.tmpl.yaml:"
                "50-56 (set_default_active_thread_percentage, set_default_device_pinned_mem_limit); "
                "api/nvidia.com/resource/v1beta1/sharing.go:190-237 (the limit per device as <MiB>M, at least 1 MiB), "
                "validate.go:73-83 (0..100 %)",
    "mig_sharing": _P + "api/nvidia.com/resource/v1beta1/sharing.go:70-73, :138-140 (a MIG device "
                        "has no timeSlicingConfig), validate.go:100-111 (TimeSlicing and MPS "
                        "accepted), cmd/gpu-kubelet-plugin/device_state.go:1061 (nothing applied "
                        "for TimeSlicing), :1080-1085 (MPS refused under DynamicMIG)",
    "one_claim": _P + "cmd/gpu-kubelet-plugin/device_state.go:1222-1255 (a device is prepared for "
                      "one claim only); demo/specs/quickstart/v1/gpu-test3.yaml:1-2 (\"One shared, "
                      "global claim providing access to a GPU / Two pods\")",
    "claim_api": _K + ":1671 (ResourceClaimReservedForMaxSize = 256 consumers), :893 (a claim's "
                      "spec is immutable), :1978-1992 (DeviceClass extendedResourceName, beta "
                      "DRAExtendedResource)",
    "quantity": "k8s.io/apimachinery v0.36.3 pkg/api/resource/quantity.go:425-461 (a BinarySI "
                "quantity as the API prints it)",
    "architecture": "github.com/NVIDIA/go-nvlib v0.11.0 pkg/nvlib/device/device.go:74-97",
}


def check_gates(gates):
    """The driver's gates as planned: v0.4.1's defaults updated with ``gates`` (gate -> bool).
    PlanError for an unknown gate, a value that is not a boolean, a combination the driver
    refuses at start, or DynamicMIG (not modelled)."""
    if gates is None:
        gates = {}
    if not isinstance(gates, dict):
        raise PlanError("dra_feature_gates must be a mapping of gate -> true/false (the chart's "
                        "featureGates), got %r" % (gates,))
    planned = dict(GATES)
    for gate, value in gates.items():
        if gate not in GATES:
            raise PlanError("dra_feature_gates: %r is not a feature gate of %s %s; its gates: %s"
                            % (gate, DRA_MODULE, DRA_DRIVER_VERSION, ", ".join(sorted(GATES))))
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            value = value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise PlanError("dra_feature_gates[%s] must be true or false, got %r" % (gate, value))
        planned[gate] = value
    # featuregates.go:195-222 ValidateFeatureGates: the plugin does not start, in these words
    for first, second, needs in (("ComputeDomainCliques", "IMEXDaemonsWithDNSNames", True),
                                 ("DynamicMIG", "PassthroughSupport", False),
                                 ("DynamicMIG", "NVMLDeviceHealthCheck", False),
                                 ("DynamicMIG", "MPSSupport", False),
                                 ("PassthroughSupport", "NVMLDeviceHealthCheck", False),
                                 ("DeviceMetadata", "PassthroughSupport", True)):
        if planned[first] and planned[second] != needs:
            if needs:
                words, fix = "requires %s to also be enabled" % second, "enable %s too" % second
            else:
                words, fix = "is currently mutually exclusive with %s" % second, \
                    "turn %s or %s off" % (first, second)
            raise PlanError("dra_feature_gates: the DRA kubelet plugin %s does not start with "
                            "these gates: \"feature gate validation failed: feature gate %s %s\" "
                            "(cmd/gpu-kubelet-plugin/main.go:211-213, pkg/featuregates/featuregates.go:"
                            "195-222). Fix: %s" % (DRA_DRIVER_VERSION, first, words, fix))
    if planned["DynamicMIG"]:
        raise PlanError("dra_feature_gates: DynamicMIG=true is not modelled by this plan: with it "
                        "the v0.4.1 driver publishes every possible placement of every MIG profile "
                        "as a partition of the whole GPU (KEP 4815, cmd/gpu-kubelet-plugin/"
                        "partitions.go) and creates the MIG device when a claim is prepared - no "
                        "layout is laid out beforehand. Fix: leave DynamicMIG at its default (false)")
    return planned


def check_interval(interval):
    """PlanError unless interval is one of the driver's time-slice intervals."""
    if interval not in INTERVALS:
        # api/nvidia.com/resource/v1beta1/validate.go:58-64, the driver's own words
        raise PlanError("dra_timeslice_interval: unknown time-slice interval: %s, supported "
                        "time-slice intervals: %s (api/nvidia.com/resource/v1beta1/validate.go:63)"
                        % (interval, ", ".join(INTERVALS)))
    return interval


def quantity(value):
    """An integer as resource.NewQuantity(value, BinarySI) prints (quantity.go:425-461): below
    1024 a plain number, else the number with the largest power of 1024 that divides it."""
    if -1024 < value < 1024:
        return str(value)
    exponent = 0
    while value % 1024 == 0 and exponent < 6:
        value //= 1024
        exponent += 1
    return "%d%s" % (value, ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")[exponent])


def mig_memory_mib(memory_gib):
    """NVML's MemorySizeMB of a GI profile, from the GiB `nvidia-smi mig -lgip` prints (2 decimals):
    the nearest 32 MiB that prints the same (as nvml_mock/gen_cards.py makes the mock's), else
    the nearest MiB - within 5 MiB of the driver's number."""
    mib = int(round(memory_gib * 1024.0 / 32)) * 32
    if "%.2f" % (mib / 1024.0) != "%.2f" % memory_gib:
        mib = int(round(memory_gib * 1024.0))
    return mib


def _common_attributes(model, spec):
    attrs = {}
    product = product_name(model) if spec.get("names") else None
    if product:
        attrs["productName"] = {"string": product}
    cc = spec.get("compute_capability") if spec.get("names") else None
    if cc in ARCHITECTURES:
        attrs["architecture"] = {"string": ARCHITECTURES[cc]}
    if cc:
        # deviceinfo.go:169-171 semver.MustParse(cc).String(): 8.0 -> 8.0.0
        attrs["cudaComputeCapability"] = {"version": ".".join((cc.split(".") + ["0", "0"])[:3])}
    return attrs


def gpu_devices(model, spec, gpus, total_mib, total_source):
    """The slice's devices of ``gpus`` whole GPUs not in MIG mode (type gpu, gpu-<minor>) and
    where their memory capacity comes from. The minors are 0 .. gpus-1, as on a node whose GPUs
    are /dev/nvidia0 .. /dev/nvidia<gpus-1>."""
    attrs = dict(_common_attributes(model, spec), type={"string": "gpu"})
    capacity = {}
    if total_mib is None and spec.get("memory_gib"):
        total_mib = int(spec["memory_gib"] * 1024)
    if total_mib:
        capacity["memory"] = {"value": quantity(total_mib * 1024 * 1024)}
    devices = [{"name": "gpu-%d" % minor, "attributes": dict(attrs), "capacity": dict(capacity)}
               for minor in range(gpus)]
    return devices, "capacity memory: NVML's memory total in bytes; here %s" % total_source


def mig_devices(model, spec, gpus, layout, placement):
    """The slice's MIG devices of ``gpus`` GPUs laid out as ``layout`` (static MIG), placed as
    ``placement`` ({profile: [starts]}, the same on every GPU)."""
    common = _common_attributes(model, spec)
    devices, unknown = [], set()
    for minor in range(gpus):
        for profile in layout:
            entry = spec["profiles"][profile]
            size = entry["placements"][0][1]
            # mig.go:112 toRFC1123Compliant(strings.ReplaceAll(profile, ".", "")), :247-260
            pname = "".join(c if c.isalnum() or c in "-." else "-" for c in
                            profile.replace(".", "").lower()).strip("-").rstrip(".")
            capacity = {}
            engines = entry.get("engines") or {}
            # mig.go:116-135 CommonCapacitiesMig, from the GI profile NVML reports
            for key, value in (("multiprocessors", entry.get("sm")), ("copyEngines", engines.get("ce")),
                               ("decoders", engines.get("dec")), ("encoders", engines.get("enc")),
                               ("jpegEngines", engines.get("jpeg")), ("ofaEngines", engines.get("ofa"))):
                if value is None:
                    unknown.add(key)
                else:
                    capacity[key] = {"value": quantity(value)}
            capacity["memory"] = {"value": quantity(mig_memory_mib(entry["memory_gib"]) * 1024 * 1024)}
            for start in placement[profile]:
                device = {"name": "gpu-%d-mig-%s-%d-%d" % (minor, pname, entry["id"], start),
                          "attributes": dict(common, type={"string": "mig"},
                                             profile={"string": profile}),
                          "capacity": dict(capacity)}
                for piece in range(start, start + size):     # deviceinfo.go:224-229
                    device["capacity"]["memorySlice%d" % piece] = {"value": "1"}
                devices.append(device)
    return devices, sorted(unknown)


def _claim(kind, name, device_class, config=None, selector=None):
    exactly = {"deviceClassName": device_class}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    request = "mig" if device_class == MIG_CLASS else "gpu"
    devices = {"requests": [{"name": request, "exactly": exactly}]}
    if config:
        devices["config"] = [{"requests": [request],
                              "opaque": {"driver": DRA_DRIVER, "parameters": config}}]
    spec = {"devices": devices}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"spec": spec} if kind == "ResourceClaimTemplate" else spec}


def _pod_spec(claim):
    request = claim["metadata"]["name"]
    key = "resourceClaimTemplateName" if claim["kind"] == "ResourceClaimTemplate" else "resourceClaimName"
    return {"resourceClaims": [{"name": "gpu", key: request}],
            "containers": [{"name": "cuda", "resources": {"claims": [{"name": "gpu"}]}}]}


def _refusal(strategy, gate):
    """The words the kubelet plugin prepares no claim with (validate.go:26, device_state.go:795,
    :301, driver.go:401): the Pods stay ContainerCreating (FailedPrepareDynamicResources)."""
    return ("error preparing devices for claim <namespace>/<claim>:<uid>: prepare devices failed: "
            "error validating GPU config: \"%s\" is selected as the GPU sharing strategy, but the "
            "\"%s\" feature gate is not enabled" % (strategy, gate))


def _names(devices):
    if len(devices) <= 3:
        return ", ".join(d["name"] for d in devices)
    return "%s ... %s" % (devices[0]["name"], devices[-1]["name"])


def _shared_view(plan, model, spec, gpus, total_mib, total_source, gates, interval):
    """DRA for time-slicing or MPS with the plan's replicas R: the same G devices, shared by
    Pods that reference one ResourceClaim per GPU."""
    mps = plan["strategy"] == "mps"
    replicas = plan["replicas"]
    devices, capacity_source = gpu_devices(model, spec, gpus, total_mib, total_source)
    gate = "MPSSupport" if mps else "TimeSlicingSettings"
    strategy = "MPS" if mps else "TimeSlicing"
    sharing = {"strategy": strategy}
    if mps:
        # the device plugin's own numbers for R replicas, which the driver sets only when asked
        sharing["mpsConfig"] = {"defaultActiveThreadPercentage": 100 // replicas,
                                "defaultPinnedDeviceMemoryLimit": "%dMi" % plan["mps_memory_limit_mib"]}
    else:
        sharing["timeSlicingConfig"] = {"interval": interval}
    config = {"apiVersion": CONFIG_API, "kind": "GpuConfig", "sharing": sharing}
    prepares = gates[gate]
    claim = _claim("ResourceClaim", "shared-gpu-0", GPU_CLASS, config if prepares else None)
    advertised = ", ".join("%s: %d" % kv for kv in plan["advertised_resources"].items())
    lines = [
        "device plugin: %s in the node's allocatable (%d GPU%s x replicas %d); DRA: %d device%s in "
        "the ResourceSlice (%s, type gpu), one per GPU - replicas do not multiply devices"
        % (advertised, gpus, "s" if gpus > 1 else "", replicas, len(devices),
           "s" if len(devices) > 1 else "", _names(devices)),
        "device plugin: a Pod asks %s: 1 and takes one of %d slots per GPU; DRA: Pods share a GPU "
        "by referencing one ResourceClaim (spec.resourceClaims[].resourceClaimName) - %d claim%s for "
        "%d GPU%s, %d Pods on each for the same spread; the driver sets no count (the API caps a "
        "claim at %d consumers), and a ResourceClaimTemplate would give each Pod a GPU of its own"
        % (GPU_EXTENDED_RESOURCE, replicas, gpus, "s" if gpus > 1 else "", gpus,
           "s" if gpus > 1 else "", replicas, RESERVED_FOR_MAX),
        "device plugin: `%s: 1` shares a GPU; DRA: `%s: 1` (gpu.nvidia.com's extendedResourceName) "
        "gets a claim of its own and a whole GPU - at most %d such Pods on the node, nothing shared"
        % (GPU_EXTENDED_RESOURCE, GPU_EXTENDED_RESOURCE, gpus),
    ]
    if mps:
        lines += [
            "device plugin: replicas %d alone give each CUDA client process %d MiB of pinned "
            "memory and %d %% of the threads; DRA: only what the claim's mpsConfig says - "
            "defaultPinnedDeviceMemoryLimit %dMi and defaultActiveThreadPercentage %d give the MPS "
            "server the same set_default_device_pinned_mem_limit %dM; without mpsConfig nothing is "
            "limited"
            % (replicas, plan["mps_memory_limit_mib"], 100 // replicas, plan["mps_memory_limit_mib"],
               100 // replicas, plan["mps_memory_limit_mib"]),
            "device plugin: its MPS control daemon serves every shared GPU of the node, %d slots "
            "(Pods) per GPU; DRA: one MPS control daemon per claim (a Deployment "
            "mps-control-daemon-<claim UID>-<hash> in the driver's namespace), the claim's GPUs in "
            "compute mode EXCLUSIVE_PROCESS; no Pod count of its own" % replicas,
            "device plugin: MPS is refused under mig-strategy mixed and skipped for MIG devices; "
            "DRA: MPS on a MIG device is a MigDeviceConfig in its claim (gate MPSSupport)",
        ]
    else:
        lines.append(
            "device plugin: no memory limit, 0 GiB guaranteed per slot; DRA: the same - every Pod "
            "of the claim sees the whole GPU (capacity memory %s), nothing is limited%s"
            % (devices[0]["capacity"].get("memory", {}).get("value", "unknown"),
               "; the TimeSlicing config sets compute mode DEFAULT and the time-slice interval %s"
               % interval if gates[gate] else ""))
    if prepares:
        lines.append(
            "device plugin: sharing is node-wide, in the plugin's config; DRA: per claim - the "
            "opaque GpuConfig {sharing: {strategy: %s}} in the plan's claim, with the driver's "
            "feature gate %s on" % (strategy, gate))
    else:
        lines.append(
            "device plugin: sharing is node-wide, in the plugin's config; DRA: per claim, an opaque "
            "GpuConfig {sharing: {strategy: %s}} - which needs the driver's feature gate %s (alpha, "
            "off in %s and on the lab's lab-node-2): without it the claim's Pods stay "
            "ContainerCreating; the plan's claim has no config, and its Pods share the GPU %s"
            % (strategy, gate, DRA_DRIVER_VERSION,
               "time-sliced, with no MPS and no limit" if mps else
               "at the GPU's own time-slice (whatever nvidia-smi compute-policy last set)"))
    lines.append(
        "device plugin: a new replica count is the config's label or a restart of the plugin; DRA: "
        "a claim's spec is immutable - a new config is a new claim, and its Pods started again")
    view = {
        "driver": "%s %s (%s)" % (DRA_MODULE, DRA_DRIVER_VERSION, DRA_DRIVER),
        "feature_gates": {g: gates[g] for g in ("TimeSlicingSettings", "MPSSupport")},
        "device_count": len(devices),
        "devices_per_gpu": 1,
        "device_types": {"gpu": len(devices)},
        "devices": devices,
        "attributes_from_the_node": GPU_NODE_ATTRIBUTES,
        "capacity_source": capacity_source,
        "device_class": GPU_CLASS,
        "claim": claim,
        "claims": gpus,
        "claim_note": "one ResourceClaim per GPU to share (shared-gpu-0 ... shared-gpu-%d); each "
                      "is allocated one GPU on one node, and every Pod that names it runs there"
                      % (gpus - 1),
        "pod_spec": _pod_spec(claim),
        # what lab-node-2's containers showed (docs/dra.md; tests/cluster/test_dra.py)
        "claim_gets": "one whole GPU (a gpu-<minor> device): its /dev/nvidia<minor> alone and all "
                      "its memory (%s), by the claim's CDI device; every container of every Pod "
                      "that references the claim gets the same GPU%s"
                      % (devices[0]["capacity"].get("memory", {}).get("value", "memory not known"),
                         "; and the claim's MPS control daemon: CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps "
                         "and its /dev/shm (sharing.go:381-400)" if mps and prepares else ""),
        "pods_per_claim_max": RESERVED_FOR_MAX,
        "pods_for_the_same_spread": replicas,
        "how_pods_share": ("one ResourceClaim, referenced by every Pod that shares the GPU; the "
                           "GPU is prepared once for the claim, and each Pod's containers get it"),
        "sharing_config": {"driver": DRA_DRIVER, "parameters": config},
        "sharing_config_prepared": prepares,
        # without its gate an MPS claim cannot be prepared: the claim left is plain time-sharing
        "isolation": plan["isolation"] if prepares else "none",
        "differences": lines,
        "sources": [SOURCES[k] for k in ("gpu_device", "gpu_memory", "classes", "config", "gates",
                                         "mps" if mps else "timeslice", "one_claim", "claim_api",
                                         "quantity", "architecture")],
    }
    if not prepares:
        view["refusal"] = _refusal(strategy, gate)
        view["sources"].insert(5, SOURCES["gate_refusal"])
    return view


def _mig_view(plan, model, spec, gpus, gates):
    """DRA for a MIG layout: one device of type mig per MIG device, a claim per Pod."""
    layout, placement = plan["mig_devices"], plan["placement"]
    devices, unknown = mig_devices(model, spec, gpus, layout, placement)
    by_profile = {p: n * gpus for p, n in layout.items()}
    templates = {p: _claim("ResourceClaimTemplate", "mig-" + p.replace("+", "-"), MIG_CLASS,
                           selector="device.attributes['%s'].profile == '%s'" % (DRA_DRIVER, p))
                 for p in layout}
    first = next(iter(layout))
    claim = templates[first]
    selector = claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"]
    advertised = ", ".join("%s: %d" % kv for kv in plan["advertised_resources"].items())
    mps_inside = "MigDeviceConfig strategy MPS with the gate MPSSupport%s" % (
        "" if gates["MPSSupport"] else " (off in %s and on the lab's lab-node-2)" % DRA_DRIVER_VERSION)
    lines = [
        "device plugin (%s): %s; DRA: %d devices of type mig (%s), each with its profile attribute "
        "(%s) - no device of type gpu while MIG mode is on"
        % (plan["mig_strategy"], advertised, len(devices), _names(devices),
           ", ".join("%s x%d" % kv for kv in by_profile.items())),
        "device plugin: a Pod asks %s; DRA: a claim of class mig.nvidia.com selecting the profile "
        "(%s; one ResourceClaimTemplate per profile: a MIG device per Pod); mig.nvidia.com has no "
        "extendedResourceName, so `%s: 1` finds no device on a DRA node"
        % (" or ".join("%s: 1" % r for r in plan["advertised_resources"]), selector,
           next(iter(plan["advertised_resources"]))),
        "device plugin: a MIG device is one Pod's; DRA: Pods can share a MIG device by one "
        "ResourceClaim (time-shared inside the instance; MPS inside with %s; strategy TimeSlicing "
        "is accepted in a MigDeviceConfig and changes nothing)" % mps_inside,
        "device plugin: the count per resource name; DRA: each device carries its capacity - "
        "multiprocessors, copy engines, decoders, encoders, JPEG and OFA engines, memory (%s for "
        "%s) and memorySlice<N> of its placement" % (devices[0]["capacity"]["memory"]["value"], first),
        "device plugin: a new layout is advertised after the plugin restarts; DRA: the same - the "
        "kubelet plugin reads the MIG devices once, when it starts, so a new layout (GPU drained "
        "first) reaches the slice through a new plugin Pod",
    ]
    if plan["mig_strategy"] == "single":
        lines.insert(1, "device plugin (single): MIG devices as %s; DRA: no MIG strategy - a "
                        "Pod's `%s: 1` becomes a claim of class gpu.nvidia.com, whose type gpu "
                        "devices are gone in MIG mode: it stays Pending"
                     % (GPU_EXTENDED_RESOURCE, GPU_EXTENDED_RESOURCE))
    view = {
        "driver": "%s %s (%s)" % (DRA_MODULE, DRA_DRIVER_VERSION, DRA_DRIVER),
        "feature_gates": {g: gates[g] for g in ("TimeSlicingSettings", "MPSSupport")},
        "device_count": len(devices),
        "devices_per_gpu": sum(layout.values()),
        "device_types": {"mig": len(devices)},
        "devices_by_profile": by_profile,
        "devices": devices,
        "attributes_from_the_node": MIG_NODE_ATTRIBUTES,
        "capacity_source": "the GI profile NVML reports; here %s - memory is NVML's MemorySizeMB, "
                           "from the printed GiB to within 5 MiB" % plan["memory_source"],
        "names_note": "the names' placement starts are the plan's placement; where a layout can "
                      "be placed more than one way the node's own may differ",
        "device_class": MIG_CLASS,
        "claim": claim,
        "claims_by_profile": templates,
        "claims": len(devices),
        "claim_note": "one ResourceClaimTemplate per profile (%s), selecting it by the profile "
                      "attribute; each Pod gets a claim and a MIG device of its own"
                      % ", ".join("mig-" + p.replace("+", "-") for p in layout),
        "pod_spec": _pod_spec(claim),
        "claim_gets": "one MIG device of the selected profile: the parent GPU's /dev/nvidia<minor> "
                      "and the capability nodes of its GPU and compute instance "
                      "(/dev/nvidia-caps/nvidia-cap<N>), its own memory and compute slices",
        "pods_per_claim_max": RESERVED_FOR_MAX,
        "pods_for_the_same_spread": 1,
        "how_pods_share": ("not by default: a ResourceClaimTemplate gives each Pod its own MIG "
                           "device; Pods that reference one ResourceClaim share its MIG device"),
        "isolation": plan["isolation"],
        "differences": lines,
        "sources": [SOURCES[k] for k in ("mig_device", "startup", "classes", "config", "gates",
                                         "mig_sharing", "one_claim", "claim_api", "quantity",
                                         "architecture")],
    }
    if unknown:
        view["capacity_unknown"] = ("not in the table for this card: %s; give "
                                    "mig_profile_listing" % ", ".join(unknown))
    return view


def dra_view(plan, model, spec, gpus, total_mib=None, total_source=None, gates=None,
             interval="Default"):
    """The ``dra`` entry of one plan of plans.sharing_plan (checked gates and interval)."""
    gates = gates if gates is not None else dict(GATES)
    if plan["strategy"] == "mig":
        return _mig_view(plan, model, spec, gpus, gates)
    return _shared_view(plan, model, spec, gpus, total_mib, total_source, gates, interval)


def dra_table(name, gpus, plans):
    """The device plugin's view and DRA's side by side, in Markdown; then the differences."""
    lines = [
        "Device plugin and DRA (%s %s): %d x %s" % (DRA_MODULE, DRA_DRIVER_VERSION, gpus, name),
        "",
        "| strategy | device plugin advertises | DRA's ResourceSlice lists | claim | Pods |",
        "|---|---|---|---|---|",
    ]
    for plan in plans:
        dra = plan["dra"]
        if plan["strategy"] == "mig":
            what = "MIG (%s)" % plan["mig_strategy"]
            devices = ", ".join("%s x%d" % kv for kv in dra["devices_by_profile"].items())
            devices = "%d mig (%s)" % (dra["device_count"], devices)
        else:
            what = "%s x%d" % (plan["strategy"], plan["replicas"])
            devices = "%d gpu, 1 per GPU" % dra["device_count"]
        config = ""
        if dra.get("sharing_config"):
            strategy = dra["sharing_config"]["parameters"]["sharing"]["strategy"]
            config = ", GpuConfig %s" % strategy if dra["sharing_config_prepared"] else \
                " (no config: GpuConfig %s needs gate %s)" % (
                    strategy, "MPSSupport" if strategy == "MPS" else "TimeSlicingSettings")
        claim = "%s of %s%s" % (dra["claim"]["kind"], dra["device_class"], config)
        pods = ("one shared claim per GPU (%d Pods each for the same spread)"
                % dra["pods_for_the_same_spread"]) if plan["strategy"] != "mig" else "one device per Pod"
        advertised = ", ".join("%s: %d" % kv for kv in plan["advertised_resources"].items())
        lines.append("| %s | %s | %s | %s | %s |" % (what, advertised, devices, claim, pods))
    lines.append("")
    for plan in plans:
        for line in plan["dra"]["differences"]:
            lines.append("- %s: %s" % (plan["strategy"], line))
    return "\n".join(lines) + "\n"
