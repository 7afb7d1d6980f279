"""The grader on a corpus of trainee attempts: the correct answer, and wrong ones
per step, each asserting which step fails and why. Steps 1-4 are graded in full
here (no cluster needed); for steps 5-8 the file checks are graded here and the
live-cluster checks in the Molecule scenario `trainee`."""
import hashlib
import os
import pathlib
import shutil

import pytest
import yaml

from ansible.module_utils.lab_grader import Grader

CORPUS = pathlib.Path(__file__).parent / "trainee"
WRONG = sorted(p.name for p in (CORPUS / "wrong").iterdir())
UNREACHABLE = "the cluster is not reachable"


def lab_from(tmp_path, overlay=None):
    lab = tmp_path / "lab"
    shutil.copytree(CORPUS / "correct", lab)
    if overlay:
        for src in (CORPUS / "wrong" / overlay).rglob("*"):
            if src.is_file() and src.name != "expect.yml":
                dest = lab / src.relative_to(CORPUS / "wrong" / overlay)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
    for path in lab.rglob("*"):
        if path.is_file():
            path.write_text(path.read_text().replace("@LAB@", str(lab)))
    return lab


def test_correct_answer_passes_steps_1_to_4(tmp_path):
    result = Grader(str(lab_from(tmp_path))).grade([1, 2, 3, 4])
    for step, res in result.items():
        assert res["passed"], (step, res["reasons"])
    # the spec-correct plain substring check passes, with advice about look-alikes
    assert any("nvidia-cdi" in a for a in result["4"]["advice"])


def test_correct_files_of_steps_5_to_8_raise_nothing_but_the_cluster(tmp_path):
    result = Grader(str(lab_from(tmp_path))).grade([5, 6, 7, 8])
    for step, res in result.items():
        assert not res["passed"]
        assert all(r.startswith(UNREACHABLE) for r in res["reasons"]), (step, res["reasons"])


def test_the_corpus_covers_every_step_with_wrong_attempts():
    steps = {yaml.safe_load((CORPUS / "wrong" / c / "expect.yml").read_text())["step"] for c in WRONG}
    assert steps >= {1, 2, 3, 4, 5, 7, 8}
    assert len(WRONG) >= 15


@pytest.mark.parametrize("case", WRONG)
def test_wrong_attempt_fails_its_step_with_the_reason(tmp_path, case):
    expect = yaml.safe_load((CORPUS / "wrong" / case / "expect.yml").read_text())
    lab = lab_from(tmp_path, case)
    if "mode" in expect:
        for path in (CORPUS / "wrong" / case).rglob("*"):
            if path.is_file() and path.name != "expect.yml":
                os.chmod(lab / path.relative_to(CORPUS / "wrong" / case), int(expect["mode"], 8))
    res = Grader(str(lab)).grade([expect["step"]])[str(expect["step"])]
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


def test_grading_changes_nothing_in_the_lab_folder(tmp_path):
    lab = lab_from(tmp_path, "always-exit-0")
    before = tree_digest(lab)
    Grader(str(lab)).grade(range(1, 9))
    assert tree_digest(lab) == before


def test_missing_lab_folder_names_the_files(tmp_path):
    res = Grader(str(tmp_path / "nothing")).grade([1, 3])
    assert "config.toml is missing" in res["1"]["reasons"][0]
    assert "merge.txt is missing" in res["3"]["reasons"][0]


def test_merge_report_is_judged_against_the_trainees_own_files(tmp_path):
    """Another config (a kata runtime too) needs another merge.txt: not the spec's lines."""
    lab = lab_from(tmp_path)
    main = lab / "etc/containerd/config.toml"
    main.write_text(main.read_text() + '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
                    '  runtime_type = "io.containerd.kata.v2"\n')
    res = Grader(str(lab)).grade([3])["3"]
    assert any("MAIN_RUNTIMES=runc, but config.toml defines kata,runc" in r for r in res["reasons"])
    (lab / "out/merge.txt").write_text((lab / "out/merge.txt").read_text().replace(
        "MAIN_RUNTIMES=runc", "MAIN_RUNTIMES=runc,kata"))
    assert Grader(str(lab)).grade([3])["3"]["passed"]


@pytest.mark.parametrize("form", ["node", "lab"])
def test_node_absolute_imports_resolve_under_the_lab_folder(tmp_path, form):
    """Trainees write the node's path or the lab folder's own path; both load the drop-in."""
    lab = lab_from(tmp_path)
    main = lab / "etc/containerd/config.toml"
    text = main.read_text()
    start = text.index("imports")
    end = text.index("\n", start)
    target = "/etc/containerd/conf.d/*.toml" if form == "node" else "%s/etc/containerd/conf.d/*.toml" % lab
    main.write_text(text[:start] + 'imports = ["%s"]' % target + text[end:])
    result = Grader(str(lab)).grade([1, 2, 3])
    for step, res in result.items():
        assert res["passed"], (form, step, res["reasons"])


def test_malformed_trainee_files_get_plain_reasons(tmp_path):
    lab = lab_from(tmp_path)
    (lab / "etc/containerd/config.toml").write_text('version = "two"\nplugins = "x"\n')
    (lab / "k8s/time-slicing.yaml").write_bytes(b"kind: ConfigMap\ndata: \xff\xfe\n")
    (lab / "k8s/gpu-pod.yaml").write_text("- just\n- a list\n")
    (lab / "out/merge.txt").write_bytes(b"\x00\x01garbage")
    result = Grader(str(lab)).grade([1, 3, 5, 7])
    for step, res in result.items():
        assert not res["passed"], step
        text = " ".join(res["reasons"])
        assert "the check itself failed" not in text and "Error:" not in text, (step, text)
    assert "containerd" in " ".join(result["1"]["reasons"])
