"""The drills of NVIDIA's real components that cut the container-runtime layer each for a cause
of its own (issues 48, 49): dra-cdi-ignored (lab-node-2's containerd 1.6 drops the claim's CDI
devices) and toolkit-no-restart (NVIDIA's installer wrote and did not restart containerd) - an
answer must name that cause, not the layer alone. dra-cdi-ignored is graded here against the
real 1.6 finding: gpu_diagnose's walk of lab-node-2's recorded objects (diagnosis_corpus/
dra-lab-node-2) stands for the live cluster. toolkit-no-restart's answers quote the installer's
own words as the lab's real node logged them (tests/cluster/test_real_node.py runs it live)."""
import json

import pytest
import yaml
from lab_testing import ROOT, dra_corpus_bundle, lab_settings  # tests/lab_testing.py

from ansible.module_utils.diagnosis.bundle_source import open_bundle
from ansible.module_utils.diagnosis.walk import Diagnosis
from ansible.module_utils.grader.grade import Grader

UNREACHABLE = "the cluster is not reachable"
CATALOG = yaml.safe_load((ROOT / "roles/gpu_drills/vars/main.yml").read_text())["gpu_drills_catalog"]


@pytest.fixture(scope="module")
def settings():
    return lab_settings()


def grade(tmp_path, settings, drill, layer, evidence, pod="gpu-drill/cuda-drill", source=None):
    """The grader's reasons for drills/<drill>.txt with the drill in place; `source` (a bundle)
    stands for the live cluster the grader diagnoses - none: the cluster is unreachable."""
    state = tmp_path / "drill.json"
    state.write_text(json.dumps({"drill": drill, "layer": CATALOG[drill]["layer"], "node": "lab-node-2", "real": True,
                                 "pod": pod}))
    (tmp_path / "drills").mkdir(exist_ok=True)
    (tmp_path / "drills" / (drill + ".txt")).write_text("LAYER=%s\nEVIDENCE=%s\n" % (layer, evidence))
    grader = Grader(str(tmp_path), kubeconfig=str(tmp_path / "no-kubeconfig"), **settings)
    if source is not None:
        grader._api = source          # pylint: disable=protected-access  (what the walk reads)
    return grader.drill(drill, str(state)).as_dict()["reasons"]


def test_the_drills_name_their_own_evidence_and_the_layer_the_catalog_says():
    """Each drill with words of its own is in the catalog, on the container-runtime layer."""
    assert sorted(Grader.DRILL_EVIDENCE) == ["dra-cdi-ignored", "toolkit-no-restart"]
    assert {CATALOG[d]["layer"] for d in Grader.DRILL_EVIDENCE} == {"container-runtime"}


def the_1_6_finding(tmp_path):
    """gpu_diagnose's container-runtime layer on lab-node-2's recorded objects (containerd 1.6.20)."""
    source = open_bundle(dra_corpus_bundle(tmp_path, "crictl-info-1.6.20.json"))
    result = Diagnosis(source).run("dra-lab", "gpu-by-claim")
    assert result["first_broken"] == "container-runtime"
    return source, {layer["layer"]: layer for layer in result["layers"]}["container-runtime"]


def test_dra_cdi_ignored_passes_an_answer_in_the_diagnosis_s_own_words(tmp_path, settings):
    source, runtime = the_1_6_finding(tmp_path)
    said = [e["value"] for e in runtime["evidence"] if e["source"].endswith("cdi_enabled (crictl info .config)")]
    assert said == ["no enableCDI and no cdiSpecDirs: the running containerd knows no CDI (1.6)"]
    answer = "crictl info on lab-node-2: %s - the claim is allocated, the Pod Running, its log says nvidia-smi: not found" % said[0]
    assert grade(tmp_path, settings, "dra-cdi-ignored", "container-runtime", answer, "dra-lab/gpu-by-claim", source) == []
    # its own next step, word for word, names CDI too
    assert grade(tmp_path, settings, "dra-cdi-ignored", "container-runtime", runtime["next"], "dra-lab/gpu-by-claim",
                 source) == []


@pytest.mark.parametrize("layer,evidence,why", [
    # the layer right, its cause not named: "runtime" alone passes runtime-not-loaded, not this drill
    ("container-runtime", "the container runtime on lab-node-2 gives the Pod no GPU",
     "EVIDENCE does not name what shows the break (one of: cdi, enablecdi, enable_cdi, containerd 1.6) - the layer "
     "alone does not tell this drill: name its cause"),
    # the claim's plugin runs and the claim is allocated: judged bottom-up, the runtime is lower
    ("device-plugin", "the claim is allocated, CDI devices never reach the container",
     "LAYER=device-plugin is not where the path is cut - a lower layer is already broken; judge bottom-up and stop at "
     "the first broken one"),
])
def test_dra_cdi_ignored_fails_an_answer_without_cdi_or_above_the_runtime(tmp_path, settings, layer, evidence, why):
    source, _ = the_1_6_finding(tmp_path)
    assert grade(tmp_path, settings, "dra-cdi-ignored", layer, evidence, "dra-lab/gpu-by-claim", source) == [why]


def test_dra_cdi_ignored_is_no_longer_shown_on_containerd_2_2_0(tmp_path, settings):
    """Back on 2.2.0 (enableCDI true) the same Pod's path is whole: the drill is not in place."""
    source = open_bundle(dra_corpus_bundle(tmp_path, "crictl-info-2.2.0.json"))
    reasons = grade(tmp_path, settings, "dra-cdi-ignored", "container-runtime", "crictl info has no enableCDI (containerd 1.6)",
                    "dra-lab/gpu-by-claim", source)
    assert reasons == ["the live cluster no longer shows this drill (gpu_diagnose names no broken layer); run "
                       "`ansible-playbook playbooks/drill.yml -e drill=dra-cdi-ignored` again"]


# the installer's own words on the lab's real lab-node-1 (toolkit.yml, RUNTIME_RESTART_MODE=none)
SKIPPED = 'level=warning msg="Skipping restart of containerd due to --restart-mode=none"'


@pytest.mark.parametrize("evidence,passes", [
    ("kubectl logs of the toolkit DaemonSet Pod: %s; crictl info lists nvidia, runc - no nvidia-cdi" % SKIPPED, True),
    ("the installer runs with RUNTIME_RESTART_MODE=none: containerd config dump lists nvidia-cdi, crictl info does not", True),
    ("node condition RuntimeRestartPending True: loaded nvidia, runc; next start nvidia, nvidia-cdi, nvidia-legacy, runc", True),
    ("containerd was not restarted after the toolkit wrote 99-nvidia.toml", True),
    # the layer's own words, without the restart: the handler's absence, not why
    ("crictl info on lab-node-1 has no nvidia-cdi handler: no runtime for nvidia-cdi is configured", False),
    ("the toolkit Pod is Ready and Running", False),
])
def test_toolkit_no_restart_needs_the_restart_named(tmp_path, settings, evidence, passes):
    reasons = grade(tmp_path, settings, "toolkit-no-restart", "container-runtime", evidence)
    # no cluster here: the live diagnosis is judged on a lab (tests/cluster/test_real_node.py)
    assert [r for r in reasons if UNREACHABLE not in r] == ([] if passes else [
        "EVIDENCE does not name what shows the break (one of: %s) - the layer alone does not tell this drill: name "
        "its cause" % ", ".join(Grader.DRILL_EVIDENCE["toolkit-no-restart"])])


def test_the_other_drills_keep_their_layer_s_words(tmp_path, settings):
    """runtime-not-loaded: the container-runtime layer's words, as before - CDI among them now."""
    for evidence in ("crictl info on lab-node-1 lists only runc", "the node's containerd has CDI off"):
        reasons = grade(tmp_path, settings, "runtime-not-loaded", "container-runtime", evidence)
        assert [r for r in reasons if UNREACHABLE not in r] == []
