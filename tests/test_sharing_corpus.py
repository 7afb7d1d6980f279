"""The device plugin v0.20.0 model against the sharing corpus (tests/sharing_corpus/cases.yaml).

Each case records what the plugin does, with the source line; the values were produced by
the plugin's own code built from tag v0.20.0. With SHARING_ORACLE=/path/to/that-binary
(usage: BIN CONFIG GPUS VRAM_GIB, prints JSON) every case is also run against it.
"""
import json
import os
import pathlib
import subprocess

import pytest
import yaml

import timeslicing as ts

CASES = yaml.safe_load((pathlib.Path(__file__).parent / "sharing_corpus" / "cases.yaml").read_text())


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


@pytest.mark.skipif(not ORACLE, reason="SHARING_ORACLE not set (the plugin cannot be built in CI)")
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
