"""classroom_report: the class table (Markdown) and JUnit XML from lab_grade's per-host results."""
import xml.etree.ElementTree as ET

import classroom_report


def graded(**steps):
    return {"status": "graded", "lab": "kwok-only",
            "steps": {k.lstrip("s"): ({"passed": True, "reasons": [], "advice": []} if v is True else
                                     {"passed": False, "reasons": v, "advice": ["see the guide"]})
                      for k, v in steps.items()}}


HOSTS = {
    "t-b": graded(s1=["plugins has a key io: the table name is unquoted"], s2=True),
    "t-a": graded(s1=True, s2=True),
    "t-c": {"status": "unreachable", "reason": "ssh: Connection refused", "lab": "?"},
}


def test_table_host_by_step_with_first_reasons(module_runner, tmp_path):
    out = module_runner(classroom_report.main, {"hosts": HOSTS, "dest": str(tmp_path / "cls")})
    assert out["changed"] and not out["failed"] and not out["passed"]
    assert out["failed_hosts"] == ["t-b", "t-c"]
    md = (tmp_path / "cls" / "class-report.md").read_text()
    assert md == out["markdown"]
    rows = [line for line in md.splitlines() if line.startswith("| t-")]
    assert rows == ["| t-a | kwok-only | PASS | PASS | 2 of 2 |",
                    "| t-b | kwok-only | FAIL [1] | PASS | 1 of 2 |",
                    "| t-c | ? | - | - | not graded [2] |"]
    assert "1. t-b, step 1: plugins has a key io: the table name is unquoted" in md
    assert "2. t-c: not graded (unreachable) - ssh: Connection refused" in md


def test_junit_has_a_suite_per_host(module_runner, tmp_path):
    out = module_runner(classroom_report.main, {"hosts": HOSTS, "dest": str(tmp_path)})
    root = ET.parse(tmp_path / "class-report.xml").getroot()
    assert root.tag == "testsuites" and root.get("tests") == "5" and root.get("failures") == "1"
    assert root.get("errors") == "1"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert sorted(suites) == ["t-a", "t-b", "t-c"]
    fail = suites["t-b"].find("testcase[@name='step 1']/failure")
    assert fail.get("message").startswith("plugins has a key io")
    assert "advice: see the guide" in fail.text
    assert suites["t-a"].find("testcase/failure") is None and len(suites["t-a"].findall("testcase")) == 2
    assert suites["t-c"].find("testcase/error").text == "ssh: Connection refused"
    assert out["junit"] == (tmp_path / "class-report.xml").read_text()


def test_same_grades_same_bytes_no_change(module_runner, tmp_path):
    module_runner(classroom_report.main, {"hosts": HOSTS, "dest": str(tmp_path)})
    again = module_runner(classroom_report.main, {"hosts": HOSTS, "dest": str(tmp_path)})
    assert not again["changed"]


def test_check_mode_writes_nothing_and_shows_the_diff(module_runner, tmp_path):
    out = module_runner(classroom_report.main, {"hosts": HOSTS, "dest": str(tmp_path / "x")},
                        check_mode=True, diff=True)
    assert out["changed"] and not (tmp_path / "x").exists()
    assert [d["after_header"] for d in out["diff"]] == [str(tmp_path / "x" / "class-report.md"),
                                                       str(tmp_path / "x" / "class-report.xml")]


def test_a_pipe_in_a_reason_does_not_break_the_table(module_runner, tmp_path):
    hosts = {"h": graded(s3=["LOADED_RUNTIMES=a|b\nsecond line"])}
    out = module_runner(classroom_report.main, {"hosts": hosts, "dest": str(tmp_path)})
    assert "1. h, step 3: LOADED_RUNTIMES=a\\|b second line" in out["markdown"]


def test_bad_input_is_named_and_nothing_is_written(module_runner, tmp_path):
    for hosts, words in (({"h": "PASS"}, "hosts.h must be a dict"),
                         ({"h": {"status": "ok"}}, "hosts.h.status must be graded, failed or unreachable"),
                         ({"h": {"status": "graded", "steps": {}}}, "hosts.h.steps must be lab_grade's steps"),
                         ({"h": {"status": "graded", "steps": {"1": {"passed": "yes"}}}},
                          "hosts.h.steps.1 must have passed: true or false")):
        out = module_runner(classroom_report.main, {"hosts": hosts, "dest": str(tmp_path / "d")})
        assert out["failed"] and words in out["msg"], out
    assert not (tmp_path / "d").exists()
    (tmp_path / "file").write_text("")
    out = module_runner(classroom_report.main, {"hosts": HOSTS, "dest": str(tmp_path / "file")})
    assert out["failed"] and "is a file, not a folder" in out["msg"]
