"""MIG layouts per card (tests/sharing_corpus/mig_layouts.yaml) and the gpu_sharing_plan module."""
from lab_testing import ROOT, TESTS  # tests/lab_testing.py

import pytest
import yaml

import gpu_sharing_plan
from ansible.module_utils.sharing import cards
from ansible.module_utils.sharing import mig_layout
from ansible.module_utils.sharing import plans as gs
from ansible.module_utils.sharing.dra_view import dra_table

LAYOUTS = yaml.safe_load(
    (TESTS / "sharing_corpus" / "mig_layouts.yaml").read_text())
FITS = [(c, l, why) for c, d in LAYOUTS.items() for l, why in d["fits"]]
REFUSED = [(c, l, p, why) for c, d in LAYOUTS.items() for l, p, why in d["refused"]]
ENGINE_REFUSED = [(c, l, e, w, why) for c, d in LAYOUTS.items()
                  for l, e, w, why in d.get("engine_refused", [])]
LISTINGS = TESTS / "sharing_corpus" / "mig_listings"


def listing(name):
    return (LISTINGS / name).read_text()


def test_every_card_has_valid_and_invalid_layouts():
    assert set(LAYOUTS) == set(cards.CARDS)
    for card, data in LAYOUTS.items():
        assert len(data["fits"]) >= 4 and len(data["refused"]) >= 3, card


@pytest.mark.parametrize("card,layout,why", FITS, ids=["%s %s" % (c, l) for c, l, _ in FITS])
def test_layout_fits(card, layout, why):
    plan = mig_layout.mig_plan(card, 2, layout)
    assert plan["isolation"] == "hardware"
    expected = {"nvidia.com/mig-" + p.replace("+", "."): 2 * n for p, n in layout.items()}
    assert plan["advertised_resources"] == expected
    assert plan["slots"] == 2 * sum(layout.values())
    # the placement found uses every instance once and no memory slice twice
    used = []
    for profile, starts in plan["placement"].items():
        size = cards.CARDS[card]["profiles"][profile]["placements"][0][1]
        for start in starts:
            used.extend(range(start, start + size))
    assert len(used) == len(set(used)) and max(used) < cards.CARDS[card]["memory_slices"]


@pytest.mark.parametrize("card,layout,profile,why", REFUSED,
                         ids=["%s %s" % (c, l) for c, l, _, _ in REFUSED])
def test_layout_refused_names_profile_and_alternatives(card, layout, profile, why):
    with pytest.raises(gs.PlanError) as info:
        mig_layout.mig_plan(card, 1, layout)
    text = info.value.message
    assert "no room for %s " % profile in text, text
    assert "Layouts that fit: {" in text
    suggested = text.split("Layouts that fit: ", 1)[1]
    for alternative in suggested.split("; "):
        assert mig_layout.place(cards.CARDS[card], yaml.safe_load(alternative))[0] is not None


def test_single_strategy_rules():
    plan = mig_layout.mig_plan("A100-SXM4-40GB", 8, {"1g.5gb": 7}, "single")
    assert plan["advertised_resources"] == {"nvidia.com/gpu": 56}
    with pytest.raises(gs.PlanError, match="more than one MIG device type present on node"):
        mig_layout.mig_plan("A100-SXM4-40GB", 1, {"3g.20gb": 1, "2g.10gb": 2}, "single")
    with pytest.raises(gs.PlanError, match="device 0 has no MIG devices configured"):
        mig_layout.mig_plan("A100-SXM4-40GB", 1, {}, "single")
    with pytest.raises(gs.PlanError, match="advertises nothing"):
        mig_layout.mig_plan("A100-SXM4-40GB", 1, {"1g.5gb": 0}, "mixed")


def test_unknown_card_and_profile_list_the_known_ones():
    with pytest.raises(gs.PlanError) as info:
        mig_layout.mig_plan("V100-SXM2-32GB", 1, {"1g.5gb": 1})
    assert all(name in info.value.message for name in cards.CARDS)
    with pytest.raises(gs.PlanError) as info:
        mig_layout.mig_plan("H100-SXM5-80GB", 1, {"1g.5gb": 1})
    assert "1g.10gb" in info.value.message and "'1g.5gb'" in info.value.message
    assert cards.card("NVIDIA A100-SXM4-40GB")[0] == "A100-SXM4-40GB"


def test_plan_module_side_by_side(module_runner, tmp_path):
    dest = tmp_path / "plan.md"
    args = {"gpu_model": "A100-SXM4-40GB", "gpus": 4, "timeslicing_replicas": 5,
            "mps_replicas": 4, "mig_devices": {"1g.5gb": 7}, "dest": str(dest)}
    out = module_runner(gpu_sharing_plan.main, args)
    assert not out["failed"], out
    ts_plan, mps_plan, mig_plan = out["plans"]
    assert ts_plan["strategy"] == "time-slicing" and ts_plan["advertised_resources"] == {
        "nvidia.com/gpu": 20} and ts_plan["guaranteed_memory_gib_per_slot"] == 0
    assert mps_plan["mps_memory_limit_mib"] == 10240 and mps_plan["fail_requests_greater_than_one"]
    assert mig_plan["advertised_resources"] == {"nvidia.com/mig-1g.5gb": 28}
    assert mig_plan["isolation"] == "hardware" and "drain" in mig_plan["change_cost"]
    assert "out-of-memory" in ts_plan["when_one_pod_takes_all_memory"]
    assert dest.read_text() == out["table"] and out["table"].count("\n| ") == 4
    assert module_runner(gpu_sharing_plan.main, args)["changed"] is False


def test_plan_module_refusals(module_runner, tmp_path):
    dest = tmp_path / "plan.md"
    for args, text in (({"timeslicing_replicas": 1}, "number of replicas must be >= 2"),
                       ({"mps_replicas": 60}, "60 > 48"),
                       ({"mig_devices": {"3g.20gb": 3}}, "no room for 3g.20gb"),
                       ({"gpu_model": "T4"}, "known cards"),
                       ({}, "at least one plan"),
                       ({"gpus": 0, "mps_replicas": 2}, "1 or more")):
        base = {"gpu_model": "A100-SXM4-40GB", "gpus": 1, "dest": str(dest)}
        base.update(args)
        out = module_runner(gpu_sharing_plan.main, base)
        assert out["failed"] and text in out["msg"], (args, out["msg"])
        assert not dest.exists()


@pytest.mark.parametrize("card,layout,engine,wanting,why", ENGINE_REFUSED,
                         ids=["%s %s" % (c, l) for c, l, _, _, _ in ENGINE_REFUSED])
def test_layout_out_of_engines_names_the_engine_and_profiles(card, layout, engine, wanting, why):
    spec = cards.CARDS[card]
    assert mig_layout.place(spec, layout)[0] is not None            # slices alone would fit
    with pytest.raises(gs.PlanError) as info:
        mig_layout.mig_plan(card, 1, layout)
    text = info.value.message
    assert "%s decoder engines and a GPU has 1" % engine in text, text
    for profile in wanting:
        assert "%s wants 1" % profile in text, text
    suggested = text.split("Layouts that fit: ", 1)[1]
    for alternative in suggested.split("; "):
        assert mig_layout.fits(spec, yaml.safe_load(alternative)), alternative


def test_me_profiles_one_per_gpu_where_the_card_says_so():
    # every +me profile of every card prints Total 1, and a GPU has one OFA for them
    for card, spec in cards.CARDS.items():
        for profile, entry in spec["profiles"].items():
            if profile.endswith("+me"):
                assert entry["max_instances"] == 1, (card, profile)
    with pytest.raises(gs.PlanError, match="no room for 1g.12gb\\+me "):
        mig_layout.mig_plan("H100-NVL-94GB", 1, {"1g.12gb+me": 2})
    plan = mig_layout.mig_plan("A30-24GB", 2, {"2g.12gb+me": 1, "1g.6gb": 2})
    assert plan["engines_used_per_gpu"] == {"dec": 4, "enc": 0, "jpeg": 1, "ofa": 1, "ce": 4}
    assert plan["engines_per_gpu"] == {"dec": 4, "enc": 0, "jpeg": 1, "ofa": 1, "ce": 4}


def test_memory_is_what_the_card_prints_with_its_source():
    # the headline of issue 22: an H200 1g.18gb slot holds 16.00 GiB, not 18
    plan = mig_layout.mig_plan("NVIDIA H200", 8, {"1g.18gb": 7})
    assert plan["guaranteed_memory_gib_per_slot"] == 16.0
    assert "mig-parted#120" in plan["memory_source"]
    for card, layout, memory in (("NVIDIA H100 80GB HBM3", {"3g.40gb": 2}, 39.5),
                                 ("NVIDIA A30", {"1g.6gb": 4}, 5.81),
                                 ("NVIDIA H100 NVL", {"3g.47gb": 2}, 46.38),
                                 ("NVIDIA GH200 480GB", {"1g.12gb": 7}, 11.0),
                                 ("NVIDIA B200", {"1g.23gb": 7}, 22.0)):
        plan = mig_layout.mig_plan(card, 1, layout)
        assert plan["guaranteed_memory_gib_per_slot"] == memory, card
        assert plan["memory_source"].startswith(("tests/sharing_corpus/mig_listings/",
                                                 "NVIDIA/mig-parted#")), plan["memory_source"]
    # a value no listing printed says so
    plan = mig_layout.mig_plan("NVIDIA B200", 1, {"3g.90gb": 2})
    assert plan["guaranteed_memory_gib_per_slot"] == 90
    assert "nominal" in plan["memory_source_by_resource"]["nvidia.com/mig-3g.90gb"]
    assert "engines not checked" in plan["engines_note"]


def test_plan_from_the_nodes_listing():
    # the A30's older driver prints 4g.24gb 23.50 and has no 2g.12gb+me
    plan = mig_layout.mig_plan("NVIDIA A30", 1, {"4g.24gb": 1},
                       profile_listing=listing("a30-older-driver.lgip.txt"),
                       placement_listing=listing("a30-older-driver.lgipp.txt"))
    assert plan["guaranteed_memory_gib_per_slot"] == 23.5
    assert "mig_profile_listing" in plan["memory_source"]
    assert plan["memory_source_by_resource"] == {"nvidia.com/mig-4g.24gb":
                                                 "mig_profile_listing line 15"}
    assert "Free below Total" in plan["listing_note"]          # it printed 0/1: in use
    with pytest.raises(gs.PlanError, match="has no MIG profile '2g.12gb\\+me'"):
        mig_layout.mig_plan("NVIDIA A30", 1, {"2g.12gb+me": 1},
                    profile_listing=listing("a30-older-driver.lgip.txt"))
    # an H100 on driver 525 prints 9.62 where the table (another driver) has 9.75; the
    # placements come from the table by profile ID when no -lgipp is given
    plan = mig_layout.mig_plan("H100-SXM5-80GB", 2, {"1g.10gb": 7},
                       profile_listing=listing("h100-80gb-525.125.06-gcp.lgip.txt"))
    assert plan["guaranteed_memory_gib_per_slot"] == 9.62
    assert plan["placement"] == {"1g.10gb": [0, 1, 2, 3, 4, 5, 6]}
    # many GPUs, the rest elided: GPU 0's rows and GPU 1's agree, the union is read
    plan = mig_layout.mig_plan("NVIDIA A100-SXM4-80GB", 8, {"7g.80gb": 1},
                       profile_listing=listing("a100-sxm4-80gb-hgx.lgip.txt"))
    assert plan["guaranteed_memory_gib_per_slot"] == 78.75 and plan["listing_gpus"] == [0, 1]
    # a card not in the table, planned from both listings
    plan = mig_layout.mig_plan("lab-card-not-in-the-table", 1, {"3g.47gb": 2},
                       profile_listing=listing("h100-nvl-560.35.03.lgip.txt"),
                       placement_listing=listing("h100-nvl-560.35.03.lgipp.txt"))
    assert plan["guaranteed_memory_gib_per_slot"] == 46.38 and plan["placement"] == {
        "3g.47gb": [0, 4]}
    with pytest.raises(gs.PlanError, match="give mig_profile_listing and mig_placement_listing"):
        mig_layout.mig_plan("lab-card-not-in-the-table", 1, {"3g.47gb": 2},
                    profile_listing=listing("h100-nvl-560.35.03.lgip.txt"))
    # engines from the listing: the A30 +me pair is refused there too
    with pytest.raises(gs.PlanError, match="JPEG decoder engines"):
        mig_layout.mig_plan("NVIDIA A30", 1, {"1g.6gb+me": 1, "2g.12gb+me": 1},
                    profile_listing=listing("a30-535.183.01.lgip.txt"),
                    placement_listing=listing("a30-535.183.01.lgipp.txt"))


def test_listing_of_two_different_cards_refused():
    h100 = listing("h100-80gb-hbm3.lgip.txt")
    other = h100.replace("|   0  MIG", "|   1  MIG").replace("9.75  ", "9.50  ")
    line = len(h100.splitlines()) + 7
    with pytest.raises(gs.PlanError, match="shows profile 1g.10gb differently at line 7 .*9.75"
                                           ".* and line %d .*9.50" % line):
        mig_layout.mig_plan("H100-SXM5-80GB", 1, {"1g.10gb": 1}, profile_listing=h100 + other)


@pytest.mark.parametrize("name,card", [
    ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"), ("NVIDIA-H100-80GB-HBM3", "H100-SXM5-80GB"),
    ("nvidia h100 80gb hbm3", "H100-SXM5-80GB"), ("H100-SXM5-80GB", "H100-SXM5-80GB"),
    ("NVIDIA H100 PCIe", "H100-PCIE-80GB"), ("NVIDIA-H100-PCIe", "H100-PCIE-80GB"),
    ("NVIDIA H100 NVL", "H100-NVL-94GB"), ("NVIDIA H200", "H200-SXM5-141GB"),
    # GFD's labels as a public note shows them under MPS and under mig-strategy single
    # (code index file 59145491406, see mig_listings/sources.yaml)
    ("NVIDIA-H100-NVL-SHARED", "H100-NVL-94GB"), ("NVIDIA-H100-NVL-MIG-1g.12gb", "H100-NVL-94GB"),
    ("NVIDIA-H200", "H200-SXM5-141GB"), ("NVIDIA A30", "A30-24GB"),
    ("NVIDIA-A30-SHARED", "A30-24GB"), ("NVIDIA A100-PCIE-40GB", "A100-SXM4-40GB"),
    ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "A100-SXM4-40GB"), ("A100-SXM4-40GB", "A100-SXM4-40GB"),
    ("NVIDIA A100 80GB PCIe", "A100-SXM4-80GB"), ("NVIDIA GH200 480GB", "GH200-96GB"),
    ("NVIDIA GH200 144G HBM3e", "GH200-144GB"), ("NVIDIA B200", "B200-180GB"),
])
def test_card_names_as_nvidia_smi_and_gfd_print_them(name, card):
    assert cards.card(name)[0] == card
    plans, _table = gs.sharing_plan(name, 1, timeslicing_replicas=2)
    assert plans[0]["gpu_model"] == card


def test_every_table_name_resolves_and_unknown_lists_them():
    for card, spec in cards.CARDS.items():
        assert cards.card(card)[0] == card and cards.card(card.lower())[0] == card
        for name in spec["names"]:
            assert cards.card(name)[0] == card
            assert cards.card(name.replace(" ", "-"))[0] == card          # GFD's label form
    with pytest.raises(gs.PlanError) as info:
        cards.card("NVIDIA H20")
    for card, spec in cards.CARDS.items():
        assert card in info.value.message and all(n in info.value.message for n in spec["names"])


def test_mps_limit_from_nvml_total_per_client_process():
    for card, replicas, limit in (("NVIDIA H100 80GB HBM3", 4, 81559 // 4),
                                  ("NVIDIA H200", 3, 143771 // 3),
                                  ("NVIDIA H100 NVL", 2, 95830 // 2),
                                  ("A100-SXM4-40GB", 3, 13653), ("NVIDIA A30", 2, 12288)):
        plan = gs.sharing_plan(card, 1, mps_replicas=replicas)[0][0]
        assert plan["mps_memory_limit_mib"] == limit, card
        assert plan["memory_source"].startswith("table: NVML total"), plan["memory_source"]
        assert "per CUDA client process" in plan["mps_memory_limit_scope"]
    plan = gs.sharing_plan("A100-SXM4-40GB", 1, mps_replicas=4, memory_total_mib=40537)[0][0]
    assert plan["mps_memory_limit_mib"] == 10134 and "memory_total_mib option" in \
        plan["memory_source"]
    plan = gs.sharing_plan("NVIDIA B200", 1, mps_replicas=4)[0][0]
    assert plan["mps_memory_limit_mib"] == 46080 and "nominal" in plan["memory_source"]
    for bad in (0, -5, True):
        with pytest.raises(gs.PlanError, match="memory_total_mib must be"):
            gs.sharing_plan("NVIDIA H200", 1, mps_replicas=2, memory_total_mib=bad)


def test_b200_profile_name_forms():
    plan = mig_layout.mig_plan("NVIDIA B200", 1, {"1g.24gb": 7})
    assert plan["mig_devices"] == {"1g.23gb": 7} and plan["profile_names"] == {
        "1g.24gb": "1g.23gb"}


def test_change_cost_tells_the_truth_with_its_source():
    plans, table = gs.sharing_plan("NVIDIA H100 80GB HBM3", 2, 3, 2, {"1g.10gb": 7})
    ts_plan, mps_plan, mig_plan = plans
    for plan in (ts_plan, mps_plan):
        assert "nvidia.com/device-plugin.config" in plan["change_cost"]
        assert "kubectl rollout restart" in plan["change_cost"]
        assert "does not watch the ConfigMap" in plan["change_cost"]
        assert "config-manager" in plan["change_cost_source"]
    assert "drain the GPU" in mig_plan["change_cost"]
    for plan in plans:
        assert plan["memory_source"] and plan["change_cost_source"]
        assert "- %s memory: %s" % (plan["strategy"], plan["memory_source"]) in table


def test_plan_module_with_listings_and_refusals(module_runner, tmp_path):
    dest = tmp_path / "plan.md"
    args = {"gpu_model": "NVIDIA A30", "gpus": 4, "mps_replicas": 2, "memory_total_mib": 24576,
            "mig_devices": {"2g.12gb": 2}, "dest": str(dest),
            "mig_profile_listing": listing("a30-535.183.01.lgip.txt"),
            "mig_placement_listing": listing("a30-535.183.01.lgipp.txt")}
    out = module_runner(gpu_sharing_plan.main, args)
    assert not out["failed"], out
    assert out["gpu_model"] == "A30-24GB" and out["plans"][1]["guaranteed_memory_gib_per_slot"] \
        == 11.69 and out["plans"][0]["mps_memory_limit_mib"] == 12288
    assert dest.read_text() == out["table"]
    dest.unlink()
    broken = dict(args, mig_profile_listing=listing("a30-535.183.01.lgip.txt").replace(
        "11.69      No     28", "11.69      No     2x"))
    out = module_runner(gpu_sharing_plan.main, broken)
    assert out["failed"] and "mig_profile_listing line 13 cannot be read" in out["msg"], out
    assert not dest.exists()


def test_readme_sharing_table_is_what_the_module_says():
    """docs/sharing.md's example table (its first five columns) is the module's own output."""
    readme = (ROOT / "docs/sharing.md").read_text()
    section = readme.split("## The three ways side by side", 1)[1]
    shown = [line for line in section.split("\n## ", 1)[0].splitlines()
             if line.startswith("| ") and not line.startswith("| strategy")]
    plans, table = gs.sharing_plan("A100-SXM4-40GB", 4, 5, 4, {"1g.5gb": 7})
    rows = [line for line in table.splitlines()
            if line.startswith("| ") and not line.startswith("| strategy")]
    assert len(shown) == len(rows) == 3
    for readme_row, row in zip(shown, rows):
        assert row.startswith(readme_row.rstrip(" |") + " |"), (readme_row, row)


def test_listings_that_do_not_belong_together_are_refused():
    with pytest.raises(gs.PlanError, match="no placement for profile ID 6 \\(2g.12gb\\+me, "
                                           "mig_profile_listing line 16\\)"):
        mig_layout.mig_plan("NVIDIA A30", 1, {"1g.6gb": 1},
                    profile_listing=listing("a30-535.183.01.lgip.txt"),
                    placement_listing=listing("a30-older-driver.lgipp.txt"))
    with pytest.raises(gs.PlanError, match="mig_placement_listing needs mig_profile_listing"):
        mig_layout.mig_plan("NVIDIA A30", 1, {"1g.6gb": 1},
                    placement_listing=listing("a30-535.183.01.lgipp.txt"))
    with pytest.raises(gs.PlanError, match="mig_placement_listing line 2 cannot be read"):
        mig_layout.mig_plan("NVIDIA A30", 1, {"1g.6gb": 1},
                    profile_listing=listing("a30-535.183.01.lgip.txt"),
                    placement_listing=listing("a30-535.183.01.lgip.txt"))


def test_plan_module_puts_dra_beside_the_device_plugin(module_runner, tmp_path):
    """Issue 48 item 7: each plan carries DRA's side (plans[].dra) and dra_table says both; the
    device plugin's plans, table and dest file are what they were, and check mode writes nothing."""
    dest = tmp_path / "plan.md"
    args = {"gpu_model": "A100-SXM4-40GB", "gpus": 4, "timeslicing_replicas": 4,
            "mig_devices": {"1g.5gb": 7}, "dest": str(dest)}
    out = module_runner(gpu_sharing_plan.main, args, check_mode=True)
    assert not out["failed"], out
    assert not dest.exists() and out["plans"][0]["dra"]["device_count"] == 4
    out = module_runner(gpu_sharing_plan.main, args)
    ts_plan, mig_plan = out["plans"]
    assert ts_plan["advertised_resources"] == {"nvidia.com/gpu": 16} and ts_plan["slots"] == 16
    assert dest.read_text() == out["table"] and "DRA" not in out["table"]
    assert ts_plan["dra"]["device_count"] == 4 and ts_plan["dra"]["device_class"] == "gpu.nvidia.com"
    assert mig_plan["dra"]["device_count"] == 28 and mig_plan["dra"]["device_class"] == "mig.nvidia.com"
    rows = [line for line in out["dra_table"].splitlines()
            if line.startswith("| ") and not line.startswith("| strategy")]
    assert rows[0].startswith("| time-slicing x4 | nvidia.com/gpu: 16 | 4 gpu, 1 per GPU | ResourceClaim ")
    assert rows[1].startswith("| MIG (mixed) | nvidia.com/mig-1g.5gb: 28 | 28 mig (1g.5gb x28) | "
                              "ResourceClaimTemplate of mig.nvidia.com |")
    for plan in out["plans"]:
        assert plan["dra"]["differences"]
        for line in plan["dra"]["differences"]:
            assert "- %s: %s\n" % (plan["strategy"], line) in out["dra_table"]
    again = module_runner(gpu_sharing_plan.main, dict(args, dra_feature_gates={"TimeSlicingSettings": True},
                                                      dra_timeslice_interval="Short"))
    assert again["changed"] is False                 # the same table: dest unchanged
    config = again["plans"][0]["dra"]["claim"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
    assert config["sharing"] == {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}}


def test_plan_module_refuses_bad_dra_input(module_runner, tmp_path):
    dest = tmp_path / "plan.md"
    for args, words in (({"dra_feature_gates": {"TimeSlicing": True}}, "'TimeSlicing' is not a feature gate"),
                        ({"dra_feature_gates": {"MPSSupport": "yes"}}, "dra_feature_gates[MPSSupport] must be true or false"),
                        ({"dra_feature_gates": {"DynamicMIG": True}}, "Fix: leave DynamicMIG at its default"),
                        ({"dra_timeslice_interval": "Fast"}, "dra_timeslice_interval")):
        base = {"gpu_model": "A100-SXM4-40GB", "gpus": 1, "timeslicing_replicas": 2, "dest": str(dest)}
        base.update(args)
        out = module_runner(gpu_sharing_plan.main, base)
        assert out["failed"] and words in out["msg"], (args, out["msg"])
        assert not dest.exists()


def test_docs_dra_table_is_what_the_module_says():
    """docs/sharing.md's DRA table (its rows) is the module's own dra_table."""
    page = (ROOT / "docs/sharing.md").read_text()
    section = page.split("## The device plugin and DRA side by side", 1)[1].split("\n#", 1)[0]
    shown = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| strategy")]
    plans, _table = gs.sharing_plan("A100-SXM4-40GB", 4, timeslicing_replicas=4, mig_devices={"1g.5gb": 7})
    rows = [line for line in dra_table("A100-SXM4-40GB", 4, plans).splitlines()
            if line.startswith("| ") and not line.startswith("| strategy")]
    assert shown == rows


def test_plan_report_of_a_caller_that_knows_no_dra_option(tmp_path):
    """plan_report takes a module whose params predate the DRA options (callers outside this
    repository build them): the plans as before, DRA's side at the driver's defaults."""
    class Module:
        check_mode = False
        params = {"gpu_model": "A100-SXM4-40GB", "gpus": 4, "timeslicing_replicas": 5, "mps_replicas": 4,
                  "mig_devices": {"1g.5gb": 7}, "mig_strategy": "mixed", "mig_profile_listing": None,
                  "mig_placement_listing": None, "memory_total_mib": None, "dest": None, "mode": "0644"}
    result = gs.plan_report(Module())
    assert [p["advertised_resources"] for p in result["plans"]] == [
        {"nvidia.com/gpu": 20}, {"nvidia.com/gpu": 16}, {"nvidia.com/mig-1g.5gb": 28}]
    assert result["plans"][0]["dra"]["feature_gates"] == {"TimeSlicingSettings": False, "MPSSupport": False}
    assert result["table"] == gs.sharing_plan("A100-SXM4-40GB", 4, 5, 4, {"1g.5gb": 7})[1]
