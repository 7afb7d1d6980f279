"""MIG layouts per card (tests/sharing_corpus/mig_layouts.yaml) and the gpu_sharing_plan module."""
import pathlib

import pytest
import yaml

import gpu_sharing_plan
from ansible.module_utils import gpu_sharing as gs

LAYOUTS = yaml.safe_load(
    (pathlib.Path(__file__).parent / "sharing_corpus" / "mig_layouts.yaml").read_text())
FITS = [(c, l, why) for c, d in LAYOUTS.items() for l, why in d["fits"]]
REFUSED = [(c, l, p, why) for c, d in LAYOUTS.items() for l, p, why in d["refused"]]


def test_every_card_has_valid_and_invalid_layouts():
    assert set(LAYOUTS) == set(gs.CARDS)
    for card, data in LAYOUTS.items():
        assert len(data["fits"]) >= 4 and len(data["refused"]) >= 3, card


@pytest.mark.parametrize("card,layout,why", FITS, ids=["%s %s" % (c, l) for c, l, _ in FITS])
def test_layout_fits(card, layout, why):
    plan = gs.mig_plan(card, 2, layout)
    assert plan["isolation"] == "hardware"
    expected = {"nvidia.com/mig-" + p.replace("+", "."): 2 * n for p, n in layout.items()}
    assert plan["advertised_resources"] == expected
    assert plan["slots"] == 2 * sum(layout.values())
    # the placement found uses every instance once and no memory slice twice
    used = []
    for profile, starts in plan["placement"].items():
        size = gs.CARDS[card]["profiles"][profile]["placements"][0][1]
        for start in starts:
            used.extend(range(start, start + size))
    assert len(used) == len(set(used)) and max(used) < gs.CARDS[card]["memory_slices"]


@pytest.mark.parametrize("card,layout,profile,why", REFUSED,
                         ids=["%s %s" % (c, l) for c, l, _, _ in REFUSED])
def test_layout_refused_names_profile_and_alternatives(card, layout, profile, why):
    with pytest.raises(gs.PlanError) as info:
        gs.mig_plan(card, 1, layout)
    text = info.value.message
    assert "no room for %s " % profile in text, text
    assert "Layouts that fit: {" in text
    suggested = text.split("Layouts that fit: ", 1)[1]
    for alternative in suggested.split("; "):
        assert gs.place(gs.CARDS[card], yaml.safe_load(alternative))[0] is not None


def test_single_strategy_rules():
    plan = gs.mig_plan("A100-SXM4-40GB", 8, {"1g.5gb": 7}, "single")
    assert plan["advertised_resources"] == {"nvidia.com/gpu": 56}
    with pytest.raises(gs.PlanError, match="more than one MIG device type present on node"):
        gs.mig_plan("A100-SXM4-40GB", 1, {"3g.20gb": 1, "2g.10gb": 2}, "single")
    with pytest.raises(gs.PlanError, match="device 0 has no MIG devices configured"):
        gs.mig_plan("A100-SXM4-40GB", 1, {}, "single")
    with pytest.raises(gs.PlanError, match="advertises nothing"):
        gs.mig_plan("A100-SXM4-40GB", 1, {"1g.5gb": 0}, "mixed")


def test_unknown_card_and_profile_list_the_known_ones():
    with pytest.raises(gs.PlanError) as info:
        gs.mig_plan("V100-SXM2-32GB", 1, {"1g.5gb": 1})
    assert all(name in info.value.message for name in gs.CARDS)
    with pytest.raises(gs.PlanError) as info:
        gs.mig_plan("H100-SXM5-80GB", 1, {"1g.5gb": 1})
    assert "1g.10gb" in info.value.message and "'1g.5gb'" in info.value.message
    assert gs.card("NVIDIA A100-SXM4-40GB")[0] == "A100-SXM4-40GB"


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
