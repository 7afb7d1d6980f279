"""playbooks/files/records-end.sh: teardown keeps the lab's records, out of a new lab's way."""
import json
import subprocess
from pathlib import Path
from lab_testing import ROOT  # tests/lab_testing.py

SCRIPT = ROOT / "playbooks" / "files" / "records-end.sh"


def end(state, check=False):
    out = subprocess.run(["bash", str(SCRIPT), str(state)] + (["check"] if check else []),
                         capture_output=True, text=True, timeout=30, check=True)
    return json.loads(out.stdout)


def test_records_move_under_ended_and_nothing_is_lost(tmp_path):
    (tmp_path / "drill.json").write_text('{"drill": "xid"}\n')
    (tmp_path / "grade-report.json").write_text('{"steps": {}}\n')
    (tmp_path / "node").mkdir()                           # not a record: stays
    said = end(tmp_path, check=True)
    assert said["changed"] and (tmp_path / "drill.json").exists()     # check mode moves nothing
    said = end(tmp_path)
    kept = Path(said["kept_in"])
    assert kept.parent == tmp_path / "ended" and sorted(p.name for p in kept.iterdir()) == ["drill.json", "grade-report.json"]
    assert (kept / "drill.json").read_text() == '{"drill": "xid"}\n'
    assert not (tmp_path / "drill.json").exists() and (tmp_path / "node").is_dir()
    assert end(tmp_path) == {"changed": False, "kept_in": None}


def test_no_state_folder_is_nothing_to_do(tmp_path):
    assert end(tmp_path / "never-made") == {"changed": False, "kept_in": None}
