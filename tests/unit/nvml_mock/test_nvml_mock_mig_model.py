"""Issue 40 item 6: the project's MIG model against NVIDIA's own components over the mock.

For every layout of mig-parted's config file (the GPU Operator's default) that names one of three
cards - A100-SXM4-40GB, H100-SXM5-80GB, A30-24GB - NVIDIA's nvidia-mig-parted v0.12.1 applies it to
4 mock GPUs of that card; then what `gpu_sharing_plan`'s model (module_utils/sharing/mig_layout.py
`mig_plan`, mixed strategy) predicts must equal what NVIDIA's device plugin v0.19.3 advertises
through its registration (dp-probe standing in for the kubelet) and what gpu-feature-discovery
v0.19.3 labels (`--oneshot --output-file`): each resource's count, each profile's memory. A
difference is a bug in the model, the card table or the mock - NVIDIA's code is the oracle.
"""
import pytest
import yaml

from ansible.module_utils.sharing import cards
from ansible.module_utils.sharing.mig_layout import mig_plan
from ansible.module_utils.sharing.plans import PlanError
from gpu_stack_testing import nvidia_binary
from nvml_mock_testing import CONFIG

CARDS = ["A100-SXM4-40GB", "H100-SXM5-80GB", "A30-24GB"]
GPUS = 4


def layouts(card, foreign=False):
    """(config name, entry) of the layouts of the config file mig-parted applies to this card: an
    entry whose device-filter names the card's PCI device ID, or one without a filter whose
    profiles are the card's (the file's unfiltered A100-40GB layouts - all-1g.5gb ... - name every
    card; on another card mig-parted turns MIG on, creates nothing and says "MIG configuration
    applied successfully": test_nvml_mock_mig_parted.py). foreign=True: the unfiltered ones with
    profiles the card does not have."""
    device = "0x%04X10DE" % cards.PCI_DEVICE_IDS[card][0]
    profiles = cards.CARDS[card]["profiles"]
    out = []
    for name, entries in yaml.safe_load(CONFIG.read_text())["mig-configs"].items():
        mine = [e for e in entries if "device-filter" not in e
                or device.lower() in [str(d).lower() for d in e["device-filter"]]]
        if not mine:
            continue
        assert len(mine) == 1, (name, mine)
        unknown = [p for p in (mine[0].get("mig-devices") or {}) if p not in profiles]
        if bool(unknown) == foreign:
            out.append((name, mine[0]))
    return out


CASES = [(card, name, entry) for card in CARDS for name, entry in layouts(card)]


def test_every_card_has_its_own_layouts():
    """The three cards' layouts are really theirs: more than all-disabled and all-enabled."""
    for card in CARDS:
        own = [name for name, entry in layouts(card) if entry.get("mig-devices")]
        assert len(own) >= 4, (card, own)


def as_v0_19_3_advertises(card, resources):
    """Where the model (the plugin's v0.20.0 rules) and the plugin built here (v0.19.3) differ: a
    "+me" MIG device. v0.19.3 matches a MIG device's profile against each profile's resource
    pattern unanchored (api/config/v1/resources.go wildCardToRegexp, regexp.MatchString), the
    profiles in NVML index order (internal/rm/rm.go VisitMigProfiles): "1g.5gb" matches
    "1g.5gb+me" first, so the device is advertised as nvidia.com/mig-1g.5gb. Upstream's bug
    NVIDIA/k8s-device-plugin#1462, fixed by PR #1807 ("anchor MIG resource pattern matching",
    merged 2026-08): the model's nvidia.com/mig-1g.5gb.me is the fixed plugin's name."""
    out = {}
    for resource, count in resources.items():
        profile = resource[len("nvidia.com/mig-"):]
        if profile.endswith(".me") and profile[:-3] in cards.CARDS[card]["profiles"]:
            resource = "nvidia.com/mig-" + profile[:-3]
        out[resource] = out.get(resource, 0) + count
    return out


def gfd_labels(node, tmp_path, strategy="mixed"):
    out = tmp_path / "gfd-labels"
    machine = tmp_path / "product_name"
    machine.write_text("DGX A100\n")
    node(nvidia_binary("gpu-feature-discovery"), "--oneshot", "--use-node-feature-api=false", "--no-timestamp",
         "--output-file=%s" % out, "--mig-strategy=%s" % strategy, "--device-discovery-strategy=nvml",
         "--machine-type-file=%s" % machine)
    return dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)


@pytest.mark.parametrize("card,name,entry", CASES, ids=["%s-%s" % (c, n) for c, n, _ in CASES])
def test_the_model_advertises_what_nvidias_plugin_and_gfd_do(parted_view, mig_parted, advertised, tmp_path,
                                                             card, name, entry):
    node = parted_view
    node.configure(card, GPUS)
    node(mig_parted, "apply", "-f", CONFIG, "-c", name)
    labels = gfd_labels(node, tmp_path)
    mig_labels = {k: v for k, v in labels.items() if k.startswith("nvidia.com/mig-")}
    if not entry["mig-enabled"]:
        assert advertised("mixed", 1) == {"nvidia.com/gpu": (GPUS, GPUS)}
        assert labels["nvidia.com/gpu.count"] == str(GPUS) and not mig_labels
        return
    layout = {profile: count for profile, count in (entry.get("mig-devices") or {}).items()}
    if not layout:
        # all-enabled: MIG on, no instances - the model says nothing is advertised; GFD names no profile
        with pytest.raises(PlanError, match="advertises nothing"):
            mig_plan(card, GPUS, layout, "mixed")
        assert labels["nvidia.com/mig.capable"] == "true" and not mig_labels
        return
    plan = mig_plan(card, GPUS, layout, "mixed")
    want = plan["advertised_resources"]
    got = advertised("mixed", len(want))
    assert {r: n for r, (n, _) in got.items()} == as_v0_19_3_advertises(card, want)
    assert all(healthy == n for n, healthy in got.values())
    for resource, count in want.items():
        profile = resource[len("nvidia.com/"):]
        assert labels["nvidia.com/%s.count" % profile] == str(count), (resource, mig_labels)
        # GFD's memory label is the instance's memory in MiB (NVML's memorySizeMB); the model's is
        # the GiB nvidia-smi prints (two decimals: 4864 MiB -> 4.75)
        memory = plan["guaranteed_memory_gib_by_resource"][resource]
        assert round(int(labels["nvidia.com/%s.memory" % profile]) / 1024, 2) == memory, (resource, memory, mig_labels)
