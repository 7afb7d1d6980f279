"""The grader on a corpus of trainee attempts: the correct answer, and wrong ones
per step, each asserting which step fails and why. Steps 1-4 are graded in full
here (no cluster needed); for steps 5-8 the file checks are graded here and the
live-cluster checks in the Molecule scenario `trainee`. The expected values are the lab's
own settings, as Ansible renders them (lab_grade_settings) - the tests hold no copy."""
import hashlib
import os
import pathlib
from lab_testing import ROOT, TESTS, lab_from, lab_settings  # tests/lab_testing.py

import pytest
import yaml

from ansible.module_utils.diagnosis.layers import LAYERS
from ansible.module_utils.grader.grade import Grader

CORPUS = TESTS / "trainee"
WRONG = sorted(p.name for p in (CORPUS / "wrong").iterdir())
UNREACHABLE = "the cluster is not reachable"
# the grader's catch-all when a check raises (Grader.grade): on the corpus it must never fire -
# test_a_crashing_check_is_reported_as_a_grader_bug proves these are its words
CRASHED = ("the grader could not judge", "report this as a grader bug")


def assert_judged(result):
    """No step of a grade() result went to the catch-all: every check judged the files."""
    for step, res in result.items():
        text = " ".join(res["reasons"])
        assert not any(words in text for words in CRASHED), (step, text)


@pytest.fixture(scope="module")
def settings():
    return lab_settings()


def test_correct_answer_passes_steps_1_to_4(tmp_path, settings):
    result = Grader(str(lab_from(tmp_path)), **settings).grade([1, 2, 3, 4])
    for step, res in result.items():
        assert res["passed"], (step, res["reasons"])
    # the spec-correct plain substring check passes, with advice about look-alikes
    assert any("nvidia-cdi" in a for a in result["4"]["advice"])


def test_correct_files_of_steps_5_to_8_raise_nothing_but_the_cluster(tmp_path, settings):
    result = Grader(str(lab_from(tmp_path)), **settings).grade([5, 6, 7, 8])
    for step, res in result.items():
        assert not res["passed"]
        assert all(r.startswith(UNREACHABLE) for r in res["reasons"]), (step, res["reasons"])


def test_the_corpus_covers_every_step_with_wrong_attempts():
    steps = {yaml.safe_load((CORPUS / "wrong" / c / "expect.yml").read_text())["step"] for c in WRONG}
    assert steps >= {1, 2, 3, 4, 5, 7, 8}
    assert len(WRONG) >= 15


@pytest.mark.parametrize("case", WRONG)
def test_wrong_attempt_fails_its_step_with_the_reason(tmp_path, case, settings):
    expect = yaml.safe_load((CORPUS / "wrong" / case / "expect.yml").read_text())
    lab = lab_from(tmp_path, case)
    if "mode" in expect:
        for path in (CORPUS / "wrong" / case).rglob("*"):
            if path.is_file() and path.name != "expect.yml":
                os.chmod(lab / path.relative_to(CORPUS / "wrong" / case), int(expect["mode"], 8))
    result = Grader(str(lab), **settings).grade([expect["step"]])
    assert_judged(result)
    res = result[str(expect["step"])]
    assert not res["passed"]
    file_reasons = [r for r in res["reasons"] if not r.startswith(UNREACHABLE)]
    assert any(expect["reason"] in r for r in file_reasons), file_reasons


def tree_digest(root):
    out = {}
    for path in sorted(pathlib.Path(root).rglob("*")):
        stat = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path)] = (digest, stat.st_mode, stat.st_mtime_ns)
    return out


def test_grading_changes_nothing_in_the_lab_folder(tmp_path, settings):
    lab = lab_from(tmp_path, "always-exit-0")
    before = tree_digest(lab)
    Grader(str(lab), **settings).grade(range(1, 9))
    assert tree_digest(lab) == before


def test_missing_lab_folder_names_the_files(tmp_path, settings):
    res = Grader(str(tmp_path / "nothing"), **settings).grade([1, 3])
    assert "config.toml is missing" in res["1"]["reasons"][0]
    assert "merge.txt is missing" in res["3"]["reasons"][0]


def test_merge_report_is_judged_against_the_trainees_own_files(tmp_path, settings):
    """Another config (a kata runtime too) needs another merge.txt: not the spec's lines."""
    lab = lab_from(tmp_path)
    main = lab / "etc/containerd/config.toml"
    main.write_text(main.read_text() + '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
                    '  runtime_type = "io.containerd.kata.v2"\n')
    res = Grader(str(lab), **settings).grade([3])["3"]
    assert any("MAIN_RUNTIMES=runc, but config.toml defines kata,runc" in r for r in res["reasons"])
    (lab / "out/merge.txt").write_text((lab / "out/merge.txt").read_text().replace(
        "MAIN_RUNTIMES=runc", "MAIN_RUNTIMES=runc,kata"))
    assert Grader(str(lab), **settings).grade([3])["3"]["passed"]


@pytest.mark.parametrize("form", ["node", "lab"])
def test_node_absolute_imports_resolve_under_the_lab_folder(tmp_path, form, settings):
    """Trainees write the node's path or the lab folder's own path; both load the drop-in."""
    lab = lab_from(tmp_path)
    main = lab / "etc/containerd/config.toml"
    text = main.read_text()
    start = text.index("imports")
    end = text.index("\n", start)
    target = "/etc/containerd/conf.d/*.toml" if form == "node" else "%s/etc/containerd/conf.d/*.toml" % lab
    main.write_text(text[:start] + 'imports = ["%s"]' % target + text[end:])
    result = Grader(str(lab), **settings).grade([1, 2, 3])
    for step, res in result.items():
        assert res["passed"], (form, step, res["reasons"])


def test_malformed_trainee_files_get_plain_reasons(tmp_path, settings):
    lab = lab_from(tmp_path)
    (lab / "etc/containerd/config.toml").write_text('version = "two"\nplugins = "x"\n')
    (lab / "k8s/time-slicing.yaml").write_bytes(b"kind: ConfigMap\ndata: \xff\xfe\n")
    (lab / "k8s/gpu-pod.yaml").write_text("- just\n- a list\n")
    (lab / "out/merge.txt").write_bytes(b"\x00\x01garbage")
    result = Grader(str(lab), **settings).grade([1, 3, 5, 7])
    assert_judged(result)
    for step, res in result.items():
        assert not res["passed"], step
        text = " ".join(res["reasons"])
        assert "Error:" not in text, (step, text)
    assert "containerd" in " ".join(result["1"]["reasons"])


def test_a_crashing_check_is_reported_as_a_grader_bug(tmp_path, settings, monkeypatch):
    """The catch-all's words are CRASHED: a check that raises is reported with them, so the
    corpus tests' assert_judged fails on a crash instead of passing on a stale phrase."""
    def crash(self):
        raise KeyError("boom")
    monkeypatch.setattr(Grader, "step1", crash)
    result = Grader(str(lab_from(tmp_path)), **settings).grade([1, 2])
    assert not result["1"]["passed"] and result["2"]["passed"]
    assert all(words in result["1"]["reasons"][0] for words in CRASHED), result["1"]["reasons"]
    with pytest.raises(AssertionError):
        assert_judged(result)


def test_the_expected_values_are_the_lab_settings(tmp_path):
    """Other settings, other verdicts: the grader expects what the lab's settings say (step 3's
    observation, step 8's initial spec from the rollout_stall role, -e as for the lab)."""
    lab = lab_from(tmp_path)
    other = lab_settings('{"lab_observed_runtimes": ["runc", "nvidia"]}',
                         "rollout_stall_initial_image=registry.example/toolkit:v9")
    assert other["rollout"]["initial_image"] == "registry.example/toolkit:v9"
    result = Grader(str(lab), **other).grade([3, 8])
    assert any("LOADED_RUNTIMES=runc, but it is the incident-day observation (containerd config "
               "dump on that node showed nvidia,runc)" in r for r in result["3"]["reasons"])
    assert any("the image must be registry.example/toolkit:v9" in r for r in result["8"]["reasons"])


def test_a_step_without_its_settings_names_them(tmp_path, settings):
    lab = lab_from(tmp_path)
    result = Grader(str(lab)).grade([1, 3, 8])
    assert result["1"]["passed"]  # step 1 compares with the spec's own fixed names only
    assert "setting(s) containerd_version, observed_runtimes" in result["3"]["reasons"][0]
    assert "setting(s) rollout" in result["8"]["reasons"][0]
    assert Grader(str(lab), **settings).grade([3])["3"]["passed"]


def test_module_utils_hold_no_copy_of_what_the_lab_deploys():
    """Step 8's values are defined once, in the rollout_stall role's defaults; the drop-in of
    step 2 once, in the lab's settings - the grader's source names neither."""
    role = yaml.safe_load((ROOT / "roles/rollout_stall/defaults/main.yml").read_text())
    lab = yaml.safe_load((ROOT / "inventory/group_vars/all/lab.yml").read_text())
    values = [str(role["rollout_stall_" + k]) for k in ("initial_image", "update_image", "initial_memory",
                                                        "update_memory")]
    values.append(lab["lab_nvidia_dropin"]["runtimes"]["nvidia"]["options"]["BinaryName"])
    for source in (ROOT / "module_utils/grader").glob("*.py"):
        text = source.read_text()
        assert not [v for v in values if v in text], source


def test_drill_words_cover_exactly_the_diagnosis_layers():
    assert sorted(Grader.DRILL_WORDS) == sorted(LAYERS)


# the MIG drills on lab-node-1 (issue 40 item 7): answers quoting NVIDIA's components - the
# device plugin's refusal under MIG_STRATEGY=single, mig-parted's failed state label (real
# output of drills mig-strategy-mismatch and mig-layout-busy on a lab, 2026-12-05)
@pytest.mark.parametrize("drill,layer,evidence,passes", [
    ("mig-strategy-mismatch", "device-plugin", "kubectl logs of the plugin: invalid MIG configuration: ... more "
     "than one MIG device type present on node", True),
    ("mig-strategy-mismatch", "device-plugin", "the GPUs are split into instances", False),
    ("mig-layout-busy", "node-advertisement", "node labels nvidia.com/mig.config=all-disabled "
     "nvidia.com/mig.config.state=failed, a Pod holds a MIG device", True),
    ("mig-layout-busy", "node-advertisement", "some Pod is in the way", False),
])
def test_mig_drill_answers_are_graded_by_their_evidence(tmp_path, settings, drill, layer, evidence, passes):
    import json
    state = tmp_path / "drill.json"
    state.write_text(json.dumps({"drill": drill, "layer": layer, "node": "lab-node-1", "real": True,
                                 "pod": "gpu-drill/cuda-drill"}))
    (tmp_path / "drills").mkdir()
    (tmp_path / "drills" / (drill + ".txt")).write_text("LAYER=%s\nEVIDENCE=%s\n" % (layer, evidence))
    grader = Grader(str(tmp_path), kubeconfig=str(tmp_path / "no-kubeconfig"), **settings)
    reasons = grader.drill(drill, str(state)).as_dict()["reasons"]
    # no cluster here: the live diagnosis is judged on a lab (tests/cluster/test_real_node.py)
    assert [r for r in reasons if UNREACHABLE not in r] == ([] if passes else [
        [r for r in reasons if r.startswith("EVIDENCE does not name")][0]])
