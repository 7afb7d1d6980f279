"""The device plugin v0.20.0 model against the sharing corpus (tests/sharing_corpus/cases.yaml).

Each case records what the plugin does, with the source line; the values were produced by
the plugin's own code built from tag v0.20.0. With SHARING_ORACLE=/path/to/that-binary
(usage: BIN CONFIG GPUS VRAM_GIB, prints JSON) every case is also run against it.
"""
import json
import os
import subprocess
from lab_testing import TESTS  # tests/lab_testing.py

import pytest
import yaml

from ansible.module_utils.sharing import device_plugin as ts

CASES = yaml.safe_load((TESTS / "sharing_corpus" / "cases.yaml").read_text())


def test_corpus_is_big_enough_and_sourced():
    assert len(CASES) >= 40
    assert len({c["id"] for c in CASES}) == len(CASES)
    for case in CASES:
        assert case.get("source"), case["id"]
        assert ("error" in case) != ("expect" in case), case["id"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_model_matches_plugin(case):
    gpus, vram = case.get("gpus", 4), case.get("vram", 40)
    if "error" in case:
        with pytest.raises(ts.SlotsError) as info:
            ts.plugin_view(case["config"], gpus, vram)
        assert case["error"] in info.value.message
        assert "refuses this config" in info.value.message
        assert "Traceback" not in info.value.message
        return
    got = ts.plugin_view(case["config"], gpus, vram)
    want = case["expect"]
    assert got["strategy"] == want["strategy"]
    assert got["advertised_resources"] == want["advertised"]
    assert got["fail_requests_greater_than_one"] is want["fail"]
    if want["strategy"] == "mps":
        assert got["mps_memory_limit_mib"] == want["mps_mib"]
        assert got["vram_shared_per_gpu_gib"] == 0 and got["isolation"] == "memory-limit"
    else:
        assert got["mps_memory_limit_mib"] is None
    for text in want.get("warnings", []):
        assert any(text in w for w in got["plugin_warnings"]), got["plugin_warnings"]


ORACLE = os.environ.get("SHARING_ORACLE")


# every case also runs against NVIDIA's plugin v0.19.3 built here, through its registration:
# tests/unit/nvml_mock/test_nvml_mock_sharing_corpus.py; this one is for a v0.20.0 harness
@pytest.mark.skipif(not ORACLE, reason="SHARING_ORACLE (a v0.20.0 harness) not set; the corpus runs against "
                                       "v0.19.3 in tests/unit/nvml_mock/test_nvml_mock_sharing_corpus.py")
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_recorded_values_against_plugin_binary(case, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(case["config"])
    out = json.loads(subprocess.run(
        [ORACLE, str(config), str(case.get("gpus", 4)), str(case.get("vram", 40))],
        capture_output=True, text=True, check=True).stdout)
    if "error" in case:
        assert case["error"] in out.get("error", "")
    else:
        assert "error" not in out
        assert out["strategy"] == case["expect"]["strategy"]
        assert out["advertised"] == case["expect"]["advertised"]
        assert out["fail_requests_greater_than_one"] is case["expect"]["fail"]


# --- real `nvidia-smi mig -lgip` / `-lgipp` listings (tests/sharing_corpus/mig_listings) ---

from ansible.module_utils.sharing import mig_listing  # noqa: E402
from ansible.module_utils.sharing import cards  # noqa: E402

LISTING_DIR = TESTS / "sharing_corpus" / "mig_listings"
SOURCES = yaml.safe_load((LISTING_DIR / "sources.yaml").read_text())
LISTINGS = sorted(p.name for p in LISTING_DIR.glob("*.txt"))


def test_every_listing_has_its_source_and_every_card_a_listing():
    assert set(SOURCES) == set(LISTINGS)
    for name, entry in SOURCES.items():
        assert entry["source"] and entry["driver"] and entry["card"] in cards.CARDS, name
        assert ("memory" in entry) == name.endswith(".lgip.txt"), name
    with_listing = {e["card"] for e in SOURCES.values() if e["table"]}
    for card, spec in cards.CARDS.items():
        # a card with no listing says so in its source (H100 PCIe: the MIG user guide only)
        assert card in with_listing or "no H100 PCIe listing" in spec["source"], card


@pytest.mark.parametrize("name", [n for n in LISTINGS if n.endswith(".lgip.txt")])
def test_listing_reads_as_printed(name):
    text = (LISTING_DIR / name).read_text()
    got = mig_listing.parse_lgip(text, source=name)
    entry = SOURCES[name]
    rows = {}
    for profiles in got["gpus"].values():
        for profile, row in profiles.items():
            rows.setdefault(profile, row["memory_gib"])
            assert row["memory_text"] in text and row["slices"] == int(profile.split("g.")[0])
    # the memory a reader sees in the file, unrounded
    assert rows == entry["memory"]
    # every profile row of the file was read: one per "MIG <name>" in the text
    assert sum(len(p) for p in got["gpus"].values()) == text.count(" MIG ")


@pytest.mark.parametrize("name", [n for n in LISTINGS if SOURCES[n]["table"]])
def test_table_carries_the_listing(name):
    """The built-in table holds what the listing prints, profile by profile."""
    text = (LISTING_DIR / name).read_text()
    card = cards.CARDS[SOURCES[name]["card"]]
    if name.endswith(".lgipp.txt"):
        for gpu, per_id in mig_listing.parse_lgipp(text, source=name)["gpus"].items():
            for profile_id, placements in per_id.items():
                entry = next(p for p in card["profiles"].values() if p["id"] == profile_id)
                assert entry["placements"] == placements, (name, profile_id)
        return
    for gpu, profiles in mig_listing.parse_lgip(text, source=name)["gpus"].items():
        for profile, row in profiles.items():
            entry = card["profiles"][profile]
            assert "source" not in entry, (name, profile)      # printed, not from elsewhere
            assert (entry["id"], entry["max_instances"], entry["memory_gib"], entry["sm"]) == \
                (row["id"], row["total"], row["memory_gib"], row["sm"]), (name, profile)
            assert entry["engines"] == {e: row[e] for e in cards.ENGINES}, (name, profile)


def test_table_values_not_printed_say_where_they_come_from():
    printed = {}
    for name in LISTINGS:
        if SOURCES[name]["table"] and name.endswith(".lgip.txt"):
            got = mig_listing.parse_lgip((LISTING_DIR / name).read_text(), source=name)
            for profiles in got["gpus"].values():
                printed.setdefault(SOURCES[name]["card"], set()).update(profiles)
    for card, spec in cards.CARDS.items():
        for profile, entry in spec["profiles"].items():
            if profile not in printed.get(card, ()):
                assert entry["source"].startswith("no listing row retrieved: "), (card, profile)


def test_same_profile_prints_differently_per_driver():
    def memory(name, profile):
        got = mig_listing.parse_lgip((LISTING_DIR / name).read_text(), source=name)
        return got["gpus"][min(got["gpus"])][profile]["memory_gib"]
    assert memory("h100-80gb-hbm3.lgip.txt", "1g.10gb") == 9.75
    assert memory("h100-80gb-525.125.06-gcp.lgip.txt", "1g.10gb") == 9.62
    assert memory("b200-mig-parted-166.lgip.txt", "1g.23gb") == 22.0
    assert memory("b200-mig-parted-187.lgip.txt", "1g.23gb") == 20.5
    assert memory("a30-535.183.01.lgip.txt", "4g.24gb") == 23.44
    assert memory("a30-older-driver.lgip.txt", "4g.24gb") == 23.5
    assert memory("h100-nvl-560.35.03.lgip.txt", "1g.12gb") == 10.75
    assert memory("h100-nvl-vgpu-opennebula.lgip.txt", "1g.12gb") == 10.62


def test_listing_shapes_many_gpus_remarks_and_prompts():
    hgx = mig_listing.parse_lgip((LISTING_DIR / "a100-sxm4-80gb-hgx.lgip.txt").read_text())
    assert sorted(hgx["gpus"]) == [0, 1] and hgx["remarks"] == ["......", "......"]
    gcp = mig_listing.parse_lgip((LISTING_DIR / "h100-80gb-525.125.06-gcp.lgip.txt").read_text())
    assert len(gcp["gpus"][0]) == 5 and gcp["remarks"] == ["    ......."]     # indented page
    h200 = mig_listing.parse_lgip((LISTING_DIR / "h200-mig-parted-120.gpu2-3.lgip.txt").read_text())
    assert sorted(h200["gpus"]) == [2, 3]                                      # no header
    a30 = mig_listing.parse_lgipp((LISTING_DIR / "a30-535.183.01.lgipp.txt").read_text())
    assert a30["gpus"][0][5] == [(0, 2), (2, 2)] and a30["gpus"][0][0] == [(0, 4)]
    assert len(a30["remarks"]) == 1 and "tạo được" in a30["remarks"][0]      # the author's note
    # the frame and borders are optional: the bare columns read the same
    text = (LISTING_DIR / "h100-nvl-560.35.03.lgip.txt").read_text()
    bare = "\n".join(line.strip().strip("|") for line in text.splitlines()
                     if not line.startswith("+") and "|=" not in line)
    def rows(listing):
        return {g: {n: {k: v for k, v in r.items() if k != "line"} for n, r in ps.items()}
                for g, ps in mig_listing.parse_lgip(listing)["gpus"].items()}
    assert rows(bare) == rows(text) and len(rows(bare)[0]) == 7


H100 = (LISTING_DIR / "h100-80gb-hbm3.lgip.txt").read_text()


@pytest.mark.parametrize("text,line,words", [
    (H100.replace("|   0  MIG 2g.20gb       14     3/3        19.62      No     32     2     0   |",
                  "|   0  MIG 2g.20gb       14     3/3        lots       No     32     2     0   |"),
     16, "cannot be read"),
    ("\n".join(l for i, l in enumerate(H100.splitlines(), 1) if i != 11), 11, "no CE/JPEG/OFA row"),
    (H100.rsplit("|                                                             8     7     1   |",
                 1)[0], 25, "cut short"),
    (H100 + "|   0  MIG 1g.10gb       19     7/7        9.75       No     16     1     0   |\n"
     "|                                                             1     1     0   |\n", 28, "twice"),
    ("No MIG-enabled devices found.\n", 1, "no GPU is in MIG mode"),
    ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n", 1, "cannot be read"),
])
def test_unreadable_listing_is_refused_naming_the_line(text, line, words):
    with pytest.raises(mig_listing.ListingError) as info:
        mig_listing.parse_lgip(text, source="mig_profile_listing")
    assert "mig_profile_listing line %d" % line in info.value.message, info.value.message
    assert words in info.value.message and "Traceback" not in info.value.message


def test_unreadable_placement_listing_is_refused_naming_the_line():
    for text, line in (("GPU  0 Profile ID 19 Placements: {0,1,2}\n", 1),
                       ("GPU  0 Profile ID 19 Placements: {0}:1\nGPU  0 Profile ID 19 "
                        "Placements: {1}:1\n", 2),
                       ("GPU  0 Profile ID 19 Placements: {}:1\n", 1)):
        with pytest.raises(mig_listing.ListingError) as info:
            mig_listing.parse_lgipp(text, source="mig_placement_listing")
        assert "mig_placement_listing line %d" % line in info.value.message, info.value.message
    for empty in ("", "  \n"):
        with pytest.raises(mig_listing.ListingError, match="is empty"):
            mig_listing.parse_lgip(empty)


def test_mps_limit_from_nvml_total_mib():
    """perDevicePinnedDeviceMemoryLimits divides NVML's total bytes: with the MiB nvidia-smi
    prints (floor of bytes / MiB) the result is the same as from the bytes."""
    config = "sharing:\n  mps:\n    resources:\n      - {name: nvidia.com/gpu, replicas: 4}\n"
    assert ts.plugin_view(config, 8, 80)["mps_memory_limit_mib"] == 20480          # nominal
    assert ts.plugin_view(config, 8, 80, memory_total_mib=81559)["mps_memory_limit_mib"] == 20389
    nvml_bytes = 81559 * 1024 * 1024 + 123456          # any bytes nvidia-smi prints as 81559
    assert nvml_bytes // 4 // 1024 // 1024 == 81559 // 4
    ts_config = config.replace("mps", "timeSlicing")
    assert ts.plugin_view(ts_config, 8, 80, memory_total_mib=81559)["mps_memory_limit_mib"] is None
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ts.SlotsError, match="memory_total_mib must be"):
            ts.plugin_view(config, 8, 80, memory_total_mib=bad)


def test_timeslicing_slots_module_takes_memory_total_mib(module_runner):
    import timeslicing_slots
    config = "sharing:\n  mps:\n    resources:\n      - {name: nvidia.com/gpu, replicas: 3}\n"
    out = module_runner(timeslicing_slots.main, {"config": config, "physical_gpus": 8,
                                                 "vram_per_gpu_gib": 141,
                                                 "memory_total_mib": 143771})
    assert not out["failed"] and out["mps_memory_limit_mib"] == 143771 // 3, out


def test_bare_listing_with_a_broken_row_is_refused_not_taken_for_a_remark():
    text = (LISTING_DIR / "h100-nvl-560.35.03.lgip.txt").read_text()
    bare = [line.strip().strip("|").strip() for line in text.splitlines()
            if not line.startswith("+") and "|=" not in line]
    broken = [line.replace("46.38", "46,38") if line.startswith("0  MIG 3g.47gb") else line
              for line in bare]
    number = next(i for i, line in enumerate(broken, 1) if "46,38" in line)
    with pytest.raises(mig_listing.ListingError, match="line %d cannot be read" % number):
        mig_listing.parse_lgip("\n".join(broken))
    # two listings one after the other (nvidia-smi mig -lgip -i 0; ... -i 1) are both read
    two = text + text.replace("|   0  MIG", "|   1  MIG")
    assert sorted(mig_listing.parse_lgip(two)["gpus"]) == [0, 1]
