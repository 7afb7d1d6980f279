"""lab_grade: the module's main() on a trainee's lab folder - the steps it grades, what it returns
(per-step results, failed_steps, the text and JUnit reports) and what it refuses. The grader's
judgment of each answer is tests/unit/grader/test_grader_corpus.py; the expected values are the
lab's own settings (lab_grade_settings), as Ansible renders them."""
import xml.etree.ElementTree as ET

import pytest

import lab_grade
from lab_testing import lab_from, lab_settings


@pytest.fixture(scope="module")
def settings():
    return lab_settings()


def grade(module_runner, lab, settings, **args):
    return module_runner(lab_grade.main, dict(settings, lab_root=str(lab), **args))


def test_the_correct_answer_passes_the_steps_asked_for(module_runner, tmp_path, settings):
    out = grade(module_runner, lab_from(tmp_path), settings, steps="1,2,3,4",
                report_path="/r/grade.json", junit_path="/r/grade.xml")
    assert not out["failed"] and out["changed"] is False, out.get("msg")
    assert sorted(out["steps"]) == ["1", "2", "3", "4"]
    assert out["passed"] is True and out["failed_steps"] == []
    assert all(res["passed"] and res["reasons"] == [] for res in out["steps"].values())
    assert "Step 1     PASS" in out["text"] and "4 of 4 passed\n" in out["text"]
    assert "Report (JSON): /r/grade.json" in out["text"] and "Report (JUnit): /r/grade.xml" in out["text"]
    suite = ET.fromstring(out["junit"])
    assert len(list(suite.iter("testcase"))) == 4
    assert not list(suite.iter("failure"))


@pytest.mark.parametrize("case,step", [("swapped-lines", 3), ("always-exit-0", 4)])
def test_a_wrong_answer_fails_its_step_with_reasons(module_runner, tmp_path, settings, case, step):
    out = grade(module_runner, lab_from(tmp_path, case), settings, steps=[1, 2, 3, 4])
    assert not out["failed"], out.get("msg")
    assert out["passed"] is False and out["failed_steps"] == [step]
    assert out["steps"][str(step)]["reasons"]
    assert "Step %d     FAIL" % step in out["text"] and "failed: %d" % step in out["text"]
    failures = list(ET.fromstring(out["junit"]).iter("failure"))
    assert len(failures) == 1


def test_check_mode_grades_the_same_and_changes_nothing(module_runner, tmp_path, settings):
    lab = lab_from(tmp_path)
    before = {p: p.read_bytes() for p in lab.rglob("*") if p.is_file()}
    out = module_runner(lab_grade.main, dict(settings, lab_root=str(lab), steps="1,2"), check_mode=True)
    assert not out["failed"] and out["passed"] and sorted(out["steps"]) == ["1", "2"]
    assert {p: p.read_bytes() for p in lab.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("args,words", [
    ({"steps": "9"}, "1-8"),
    ({"steps": []}, "nothing to grade"),
    ({"drill": "xid"}, "drill_state_file"),
])
def test_what_it_cannot_grade_is_refused_plainly(module_runner, tmp_path, settings, args, words):
    out = grade(module_runner, lab_from(tmp_path), settings, **args)
    assert out["failed"] and words in out["msg"], out
