"""Issue 40 item 6, time-slicing and MPS: the sharing corpus (tests/sharing_corpus/cases.yaml, the
model of the device plugin's v0.20.0 rules) against NVIDIA's device plugin v0.19.3 built here,
over the mock, through its own registration - what it advertises to a kubelet (dp-probe standing
in for the kubelet's side), or the words it stops with.

Each case's node is its `gpus` mock GPUs of the card with its `vram` (40: A100-SXM4-40GB, 80:
A100-SXM4-80GB, 24: A30-24GB). Where v0.19.3 and the v0.20.0 model differ, DIFFERENCES says so,
with NVIDIA's source; nothing is skipped without its reason.
"""
import pytest
import yaml

from lab_testing import TESTS

CASES = yaml.safe_load((TESTS / "sharing_corpus" / "cases.yaml").read_text())
CARD_OF_VRAM = {40: "A100-SXM4-40GB", 80: "A100-SXM4-80GB", 24: "A30-24GB"}
# MPS: the plugin accepts an MPS config and then waits for NVIDIA's MPS control daemon
# (cmd/mps-control-daemon of the same module, which starts the driver's nvidia-cuda-mps-control -
# a driver binary the mock does not have): "Failed to start plugin: error waiting for MPS daemon".
# So for an MPS case the plugin's own part is checked - it accepted the config and went on to the
# daemon - and what it would advertise is not seen here; a refusal the corpus sources to the
# daemon (cmd/mps-control-daemon/...) is the daemon's, not the plugin's: the plugin goes on too.
WAITS_FOR_MPS = "error waiting for MPS daemon"


def test_every_vram_has_a_card():
    assert {c.get("vram", 40) for c in CASES} <= set(CARD_OF_VRAM)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_the_corpus_against_the_plugin_built_here(case, advertised, tmp_path):
    gpus, card = case.get("gpus", 4), CARD_OF_VRAM[case.get("vram", 40)]
    (tmp_path / "nvml-mock.conf").write_text("card = %s\ncount = %d\n" % (card, gpus))
    if case.get("expect", {}).get("strategy") == "mps" or case["source"].startswith("cmd/mps-control-daemon"):
        log = advertised(None, 1, config=case["config"], log_says=WAITS_FOR_MPS)
        assert "unable to load config" not in log and "error starting plugins" not in log, log[-2000:]
        return
    if "error" in case:
        log = advertised(None, 1, config=case["config"], refused=True)
        assert case["error"] in log, log[-2000:]
        return
    want = case["expect"]["advertised"]
    got = advertised(None, len(want), config=case["config"])
    assert {r: n for r, (n, _) in got.items()} == want
