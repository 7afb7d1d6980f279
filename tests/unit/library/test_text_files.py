"""text_files: several files in one call - parents, force=false records, backups, check, diff."""
import os

import text_files


def test_writes_files_and_parents_then_converges(module_runner, tmp_path):
    a, b = tmp_path / "k8s" / "a.yaml", tmp_path / "bin" / "run.sh"
    args = {"files": [{"path": str(a), "content": "kind: Pod\n"},
                      {"path": str(b), "content": "#!/bin/sh\n", "mode": "0755"}],
            "dirs": [str(tmp_path / "out")]}
    out = module_runner(text_files.main, args)
    assert out["changed"] and out["changed_files"] == [str(a), str(b)]
    assert sorted(out["created_dirs"]) == sorted(str(tmp_path / d) for d in ("k8s", "bin", "out"))
    assert a.read_text() == "kind: Pod\n" and oct(b.stat().st_mode & 0o777) == "0o755"
    again = module_runner(text_files.main, args)
    assert not again["changed"] and again["changed_files"] == [] and again["created_dirs"] == []


def test_a_record_is_never_rewritten(module_runner, tmp_path):
    record = tmp_path / "unscheduled.txt"
    record.write_text("what was seen\n")
    out = module_runner(text_files.main, {"files": [{"path": str(record), "content": "new\n",
                                                     "force": False}]})
    assert not out["changed"] and out["files"][0]["kept_existing"]
    assert record.read_text() == "what was seen\n"


def test_backup_keeps_the_old_content(module_runner, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("version = 2\n")
    out = module_runner(text_files.main, {"files": [{"path": str(path), "content": "version = 3\n",
                                                     "backup": True}]})
    backup = out["files"][0]["backup_file"]
    assert open(backup).read() == "version = 2\n" and path.read_text() == "version = 3\n"


def test_check_mode_and_diff_touch_nothing(module_runner, tmp_path):
    path = tmp_path / "new" / "x.txt"
    out = module_runner(text_files.main, {"files": [{"path": str(path), "content": "x\n"}],
                                          "dirs": [str(tmp_path / "d")]}, check_mode=True, diff=True)
    assert out["changed"] and not os.path.exists(tmp_path / "new") and not os.path.exists(tmp_path / "d")
    assert out["diff"] == [{"before": "", "after": "x\n", "before_header": "/dev/null",
                            "after_header": str(path)}]


def test_mode_alone_is_a_change(module_runner, tmp_path):
    path = tmp_path / "s.sh"
    path.write_text("x\n")
    path.chmod(0o644)
    out = module_runner(text_files.main, {"files": [{"path": str(path), "content": "x\n", "mode": "0755"}]})
    assert out["changed"] and oct(path.stat().st_mode & 0o777) == "0o755"


def test_bad_input_is_named(module_runner, tmp_path):
    out = module_runner(text_files.main, {"files": [{"path": str(tmp_path / "x"), "content": "",
                                                     "mode": "rw"}]})
    assert out["failed"] and "not an octal file mode" in out["msg"] and str(tmp_path / "x") in out["msg"]
    (tmp_path / "dir").mkdir()
    out = module_runner(text_files.main, {"files": [{"path": str(tmp_path / "dir"), "content": ""}]})
    assert out["failed"] and "is a directory" in out["msg"]
    (tmp_path / "file").write_text("")
    out = module_runner(text_files.main, {"files": [{"path": str(tmp_path / "file" / "x"), "content": ""}]})
    assert out["failed"] and "is not a folder" in out["msg"]
