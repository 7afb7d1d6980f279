"""DRA's side of gpu_sharing_plan (issue 48 item 7): what NVIDIA's DRA driver v0.4.1 publishes for
the plan's card and choice, checked against the slice, classes and claim the lab recorded from its
lab-node-2 (diagnosis_corpus/dra-lab-node-2/), the mock's MIG table, and - where the Go module
cache holds it - the driver's own source at the lines the plan cites."""
import json
import pathlib
import re

from lab_testing import ROOT, TESTS  # tests/lab_testing.py

import pytest

import versions
from ansible.module_utils.sharing import cards
from ansible.module_utils.sharing import dra_view as dv
from ansible.module_utils.sharing import plans as gs

CORPUS = TESTS / "diagnosis_corpus/dra-lab-node-2"
GO_MOD_CACHE = pathlib.Path.home() / "go/pkg/mod"
DRIVER_SOURCE = GO_MOD_CACHE / ("sigs.k8s.io/dra-driver-nvidia-gpu@" + dv.DRA_DRIVER_VERSION)
# all-balanced on an A100-40GB, as mig-parted's config lays it out (tests/cluster/test_dra.py
# asserts these profiles in the real slice of lab-node-2)
ALL_BALANCED = {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}


def corpus(name):
    return json.loads((CORPUS / name).read_text())["items"]


def plan_of(strategy, model="A100-SXM4-40GB", gpus=4, replicas=4, layout=None, **kwargs):
    asked = {"time-slicing": {"timeslicing_replicas": replicas}, "mps": {"mps_replicas": replicas},
             "mig": {"mig_devices": layout or ALL_BALANCED}}[strategy]
    plans, _table = gs.sharing_plan(model, gpus, **asked, **kwargs)
    return plans[0]


def test_the_version_is_the_one_the_lab_builds():
    assert dv.DRA_DRIVER_VERSION == "v" + versions.go_mod_version("dra-driver-nvidia-gpu", dv.DRA_MODULE)


def test_whole_gpus_are_the_devices_lab_node_2_published():
    """The lab's card (4 x A100-SXM4-40GB): the recorded slice lists gpu-0..gpu-3 of type gpu; the
    plan's devices carry the same attribute values and capacity, and every recorded attribute the
    plan leaves out is one it says only the node has."""
    [recorded_slice] = corpus("resourceslices.json")
    recorded = {d["name"]: d for d in recorded_slice["spec"]["devices"]}
    dra = plan_of("time-slicing")["dra"]
    assert recorded_slice["spec"]["driver"] == dv.DRA_DRIVER
    planned = {d["name"]: d for d in dra["devices"]}
    assert sorted(planned) == sorted(recorded) and dra["device_count"] == len(recorded)
    node_only = {a.split(" ")[0] for a in dra["attributes_from_the_node"]}
    for name, device in recorded.items():
        mine = planned[name]
        assert {k: device["attributes"][k] for k in mine["attributes"]} == mine["attributes"], name
        assert set(device["attributes"]) - set(mine["attributes"]) <= node_only, name
        assert mine["capacity"] == device["capacity"], name


def test_the_claim_asks_the_class_the_lab_has_for_the_planned_type():
    classes = {c["metadata"]["name"]: c["spec"] for c in corpus("deviceclasses.json")}
    for dra in (plan_of("time-slicing")["dra"], plan_of("mig")["dra"]):
        kind = set(dra["device_types"])
        [wanted] = kind
        expression = classes[dra["device_class"]]["selectors"][0]["cel"]["expression"]
        assert "device.attributes['%s'].type == '%s'" % (dv.DRA_DRIVER, wanted) in expression
        spec = dra["claim"]["spec"]
        spec = spec.get("spec", spec)
        assert spec["devices"]["requests"][0]["exactly"]["deviceClassName"] == dra["device_class"]
    assert classes[dv.GPU_CLASS]["extendedResourceName"] == dv.GPU_EXTENDED_RESOURCE
    assert "extendedResourceName" not in classes[dv.MIG_CLASS]
    # the lab's own claim asked one device of the class by the same request shape
    [claim] = corpus("resourceclaims.json")
    recorded = claim["spec"]["devices"]["requests"][0]
    planned = plan_of("time-slicing")["dra"]["claim"]["spec"]["devices"]["requests"][0]
    assert recorded["exactly"]["deviceClassName"] == planned["exactly"]["deviceClassName"]
    assert recorded["exactly"]["count"] == 1 and "count" not in planned["exactly"]   # 1 by default


@pytest.mark.parametrize("strategy", ["time-slicing", "mps"])
@pytest.mark.parametrize("gpus,replicas", [(1, 2), (4, 4), (8, 7)])
def test_replicas_do_not_multiply_devices_pods_share_one_claim(strategy, gpus, replicas):
    plan = plan_of(strategy, gpus=gpus, replicas=replicas)
    dra = plan["dra"]
    assert plan["slots"] == gpus * replicas                       # the device plugin's view
    assert dra["device_count"] == gpus and dra["devices_per_gpu"] == 1
    assert [d["name"] for d in dra["devices"]] == ["gpu-%d" % i for i in range(gpus)]
    assert dra["claims"] == gpus and dra["pods_for_the_same_spread"] == replicas
    assert dra["claim"]["kind"] == "ResourceClaim"
    assert dra["pod_spec"]["resourceClaims"][0]["resourceClaimName"] == dra["claim"]["metadata"]["name"]
    assert dra["pods_per_claim_max"] == 256
    first = dra["differences"][0]
    assert first.startswith("device plugin: nvidia.com/gpu: %d " % (gpus * replicas))
    assert "DRA: %d device" % gpus in first


def test_time_slicing_config_needs_its_gate():
    dra = plan_of("time-slicing")["dra"]                           # v0.4.1's defaults: off
    assert dra["feature_gates"] == {"TimeSlicingSettings": False, "MPSSupport": False}
    assert "config" not in dra["claim"]["spec"]["devices"] and not dra["sharing_config_prepared"]
    assert '"TimeSlicing" is selected as the GPU sharing strategy, but the "TimeSlicingSettings" ' \
           'feature gate is not enabled' in dra["refusal"]
    assert any("TimeSlicingSettings" in line and "ContainerCreating" in line for line in dra["differences"])
    dra = plan_of("time-slicing", dra_feature_gates={"TimeSlicingSettings": True},
                  dra_timeslice_interval="Long")["dra"]
    assert "refusal" not in dra and dra["sharing_config_prepared"]
    assert dra["claim"]["spec"]["devices"]["config"] == [{
        "requests": ["gpu"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {
            "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
            "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}}}]


@pytest.mark.parametrize("model,replicas", [("A100-SXM4-40GB", 4), ("NVIDIA H100 80GB HBM3", 3), ("NVIDIA A30", 2)])
def test_mps_claim_sets_what_the_device_plugin_sets_by_itself(model, replicas):
    plan = plan_of("mps", model=model, replicas=replicas, dra_feature_gates={"MPSSupport": "true"})
    [config] = plan["dra"]["claim"]["spec"]["devices"]["config"]
    mps = config["opaque"]["parameters"]["sharing"]["mpsConfig"]
    # the driver sends <quantity bytes / 1024 / 1024>M (api/.../sharing.go Megabyte), the plugin
    # <total / replicas / 1024 / 1024>M: the same number
    mib = int(re.fullmatch(r"(\d+)Mi", mps["defaultPinnedDeviceMemoryLimit"]).group(1))
    assert mib == plan["mps_memory_limit_mib"]
    assert mps["defaultActiveThreadPercentage"] == 100 // replicas
    assert plan["dra"]["isolation"] == plan["isolation"] == "memory-limit"
    off = plan_of("mps", model=model, replicas=replicas)["dra"]
    assert "config" not in off["claim"]["spec"]["devices"] and off["isolation"] == "none"
    assert '"MPS" is selected as the GPU sharing strategy, but the "MPSSupport"' in off["refusal"]


def test_mig_devices_as_the_driver_names_and_sizes_them():
    plan = plan_of("mig")
    dra = plan["dra"]
    spec = cards.CARDS["A100-SXM4-40GB"]
    profiles = sorted(d["attributes"]["profile"]["string"] for d in dra["devices"])
    assert profiles == ["1g.5gb"] * 8 + ["2g.10gb"] * 4 + ["3g.20gb"] * 4
    assert dra["device_types"] == {"mig": 16} and dra["device_class"] == dv.MIG_CLASS
    used = {}
    for device in dra["devices"]:
        # cmd/gpu-kubelet-plugin/mig.go canonicalMigNameRegex
        minor, pname, pid, start = re.fullmatch(r"gpu-(\d+)-mig-(.+)-(\d+)-(\d+)", device["name"]).groups()
        profile = device["attributes"]["profile"]["string"]
        entry = spec["profiles"][profile]
        assert pname == profile.replace(".", "") and int(pid) == entry["id"]
        assert int(start) in plan["placement"][profile]
        slices = sorted(int(k[len("memorySlice"):]) for k in device["capacity"] if k.startswith("memorySlice"))
        assert slices == list(range(int(start), int(start) + entry["placements"][0][1]))
        for piece in slices:
            assert (minor, piece) not in used, device["name"]
            used[(minor, piece)] = device["name"]
        assert device["capacity"]["multiprocessors"] == {"value": str(entry["sm"])}
        assert device["capacity"]["copyEngines"] == {"value": str(entry["engines"]["ce"])}
        memory = int(re.fullmatch(r"(\d+)Mi", device["capacity"]["memory"]["value"]).group(1))
        assert "%.2f" % (memory / 1024.0) == "%.2f" % entry["memory_gib"]
    templates = dra["claims_by_profile"]
    assert sorted(templates) == sorted(ALL_BALANCED)
    for profile, template in templates.items():
        request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        assert request["selectors"] == [{"cel": {"expression": "device.attributes['gpu.nvidia.com']."
                                                               "profile == '%s'" % profile}}]
    assert dra["claim"]["kind"] == "ResourceClaimTemplate" and dra["pods_for_the_same_spread"] == 1


def test_me_profile_names_are_rfc1123():
    dra = plan_of("mig", gpus=1, layout={"1g.5gb+me": 1, "1g.5gb": 6})["dra"]
    names = [d["name"] for d in dra["devices"]]
    assert sum(1 for n in names if re.fullmatch(r"gpu-0-mig-1g5gb-me-20-\d", n)) == 1
    assert dra["claims_by_profile"]["1g.5gb+me"]["metadata"]["name"] == "mig-1g.5gb-me"


def test_mig_memory_is_the_mock_s_memory_size():
    """lab-node-2's MIG devices come from the mock's table (nvml_mock/cards.tsv): the plan's MiB
    for every profile of every card is the MemorySizeMB the mock reports."""
    rows = [line.split("\t") for line in (ROOT / "nvml_mock/cards.tsv").read_text().splitlines()
            if line.startswith("mig\t")]
    assert rows
    for row in rows:
        card, profile, mib = row[1], row[2], int(row[6])
        assert dv.mig_memory_mib(cards.CARDS[card]["profiles"][profile]["memory_gib"]) == mib, (card, profile)


@pytest.mark.parametrize("value,printed", [
    (0, "0"), (14, "14"), (1023, "1023"), (1024, "1Ki"), (1536, "1536"), (40960 * 2 ** 20, "40Gi"),
    (20096 * 2 ** 20, "20096Mi"), (81559 * 2 ** 20, "81559Mi"), (2 ** 40, "1Ti")])
def test_quantity_as_the_api_prints_it(value, printed):
    assert dv.quantity(value) == printed


def test_mig_strategy_single_says_the_pod_stays_pending():
    plan = plan_of("mig", layout={"1g.5gb": 7}, mig_strategy="single")
    assert plan["advertised_resources"] == {"nvidia.com/gpu": 28}
    assert any(line.startswith("device plugin (single)") and "Pending" in line for line in plan["dra"]["differences"])
    assert plan["dra"]["device_count"] == 28


@pytest.mark.parametrize("gates,words", [
    ({"TimeSlicing": True}, "'TimeSlicing' is not a feature gate of sigs.k8s.io/dra-driver-nvidia-gpu v0.4.1; "
                            "its gates: ComputeDomainCliques"),
    ({"MPSSupport": "yes"}, "dra_feature_gates[MPSSupport] must be true or false, got 'yes'"),
    ({"DynamicMIG": True}, "DynamicMIG=true is not modelled"),
    ({"DynamicMIG": True, "MPSSupport": True},
     "feature gate validation failed: feature gate DynamicMIG is currently mutually exclusive with MPSSupport"),
    ({"DeviceMetadata": True}, "feature gate DeviceMetadata requires PassthroughSupport to also be enabled"),
    (["MPSSupport"], "dra_feature_gates must be a mapping"),
])
def test_bad_gates_are_refused_with_the_fix(gates, words):
    with pytest.raises(gs.PlanError) as info:
        plan_of("time-slicing", dra_feature_gates=gates)
    assert words in info.value.message and ("Fix:" in info.value.message or "its gates" in info.value.message
                                            or "must be" in info.value.message)


def test_bad_interval_is_refused_in_the_driver_s_words():
    with pytest.raises(gs.PlanError, match="unknown time-slice interval: Fast, supported time-slice intervals: "
                                           "Default, Short, Medium, Long"):
        plan_of("time-slicing", dra_timeslice_interval="Fast")


def test_a_card_from_its_listings_has_no_guessed_attributes():
    listings = TESTS / "sharing_corpus/mig_listings"
    plans, _ = gs.sharing_plan("lab-card-not-in-the-table", 1, mig_devices={"3g.47gb": 2},
                               mig_profile_listing=(listings / "h100-nvl-560.35.03.lgip.txt").read_text(),
                               mig_placement_listing=(listings / "h100-nvl-560.35.03.lgipp.txt").read_text())
    for device in plans[0]["dra"]["devices"]:
        assert set(device["attributes"]) == {"type", "profile"}
        assert device["capacity"]["multiprocessors"] == {"value": "60"}


def _cited():
    """(path, first, last) for every `file:line[-line]` of SOURCES in the driver's module; a bare
    file name is in the folder of the path before it ("values.yaml" after a chart template is
    the chart's)."""
    out = []
    for text in dv.SOURCES.values():
        if not text.startswith(dv.DRA_MODULE + "@"):
            continue
        current = folder = None
        for match in re.finditer(r"([\w./-]+\.(?:go|yaml))?:(\d+)(?:-(\d+))?", text):
            name = match.group(1)
            if name and "/" in name:
                current, folder = name, pathlib.PurePosixPath(name).parent
            elif name:
                current = str(folder / name)
                if not (DRIVER_SOURCE / current).is_file() and (DRIVER_SOURCE / folder.parent / name).is_file():
                    current = str(folder.parent / name)
            out.append((current, int(match.group(2)), int(match.group(3) or match.group(2))))
    return out


@pytest.mark.skipif(not DRIVER_SOURCE.is_dir(), reason="the driver's source is not in the Go module cache")
def test_cited_lines_hold_what_the_rules_say():
    cited = _cited()
    assert len(cited) > 40
    for name, first, last in cited:
        lines = (DRIVER_SOURCE / name).read_text().splitlines()
        assert 1 <= first <= last <= len(lines), (name, first, last)
    checks = [("cmd/gpu-kubelet-plugin/deviceinfo.go", 107, 'fmt.Sprintf("gpu-%d", d.minor)'),
              ("cmd/gpu-kubelet-plugin/mig.go", 113, 'fmt.Sprintf("gpu-%d-mig-%s-%d-%d"'),
              ("cmd/gpu-kubelet-plugin/mig.go", 112, 'strings.ReplaceAll(profileName, ".", "")'),
              ("cmd/gpu-kubelet-plugin/types.go", 27, 'GpuDeviceType = "gpu"'),
              ("cmd/gpu-kubelet-plugin/types.go", 32, 'MigStaticDeviceType = "mig"'),
              ("cmd/gpu-kubelet-plugin/nvlib.go", 302, "if !gpuInfo.migEnabled {"),
              ("cmd/gpu-kubelet-plugin/partitions.go", 40, "*d.memoryBytes"),
              ("cmd/gpu-kubelet-plugin/deviceinfo.go", 225, 'fmt.Sprintf("memorySlice%d", i)'),
              ("cmd/gpu-kubelet-plugin/device_state.go", 1061, "if tsc != nil {"),
              ("cmd/gpu-kubelet-plugin/device_state.go", 1084, "MPS is not yet supported when using featureGates.DynamicMIG=true"),
              ("cmd/gpu-kubelet-plugin/sharing.go", 308, '"EXCLUSIVE_PROCESS"'),
              ("cmd/gpu-kubelet-plugin/driver.go", 401, "error preparing devices for claim %s: %w"),
              ("cmd/gpu-kubelet-plugin/main.go", 212, "feature gate validation failed: %w"),
              ("api/nvidia.com/resource/v1beta1/validate.go", 26, "feature gate is not enabled"),
              ("api/nvidia.com/resource/v1beta1/sharing.go", 139, "return nil, nil"),
              ("api/nvidia.com/resource/v1beta1/gpuconfig.go", 53, "Interval: ptr.To(DefaultTimeSlice)"),
              ("pkg/featuregates/featuregates.go", 90, "Default:    false"),
              ("pkg/featuregates/featuregates.go", 97, "Default:    false"),
              ("deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml", 13,
               "extendedResourceName: nvidia.com/gpu"),
              ("templates/mps-control-daemon.tmpl.yaml", 55, "set_default_device_pinned_mem_limit")]
    for name, number, words in checks:
        assert words in (DRIVER_SOURCE / name).read_text().splitlines()[number - 1], (name, number)
    # every gate of v0.4.1 with its default (featuregates.go:87-151)
    text = (DRIVER_SOURCE / "pkg/featuregates/featuregates.go").read_text()
    table = text.split("var defaultFeatureGates", 1)[1].split("\n}\n", 1)[0]
    found = dict(re.findall(r"\t(\w+): \{\n\t\t\{\n\t\t\tDefault:\s+(true|false)", table))
    assert {k: v == "true" for k, v in found.items()} == dv.GATES
    api = GO_MOD_CACHE / "k8s.io/api@v0.36.3/resource/v1/types.go"
    if api.is_file():
        assert "ResourceClaimReservedForMaxSize = %d" % dv.RESERVED_FOR_MAX in api.read_text().splitlines()[1670]
