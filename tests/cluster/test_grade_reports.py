"""grade.yml writes its reports where the lab keeps its state, even when nothing made that folder
yet (lab.yml makes it only with the real node: -e lab_real_node=false left grade.yml failing)."""
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def test_grade_writes_its_reports_into_a_state_folder_nothing_made(tmp_path):
    state, root = tmp_path / "state", tmp_path / "gpuop"
    env = dict(os.environ, XDG_STATE_HOME=str(state), ANSIBLE_FORCE_COLOR="0")
    out = subprocess.run([PLAYBOOK, "playbooks/grade.yml", "-e", "grade_steps=1", "-e", "lab_root=%s" % root,
                          "-e", "lab_cluster_name=no-state-yet"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode != 0 and "Step 1" in out.stdout and "FAIL" in out.stdout, out.stdout[-3000:]
    assert "does not exist" not in out.stdout, out.stdout[-3000:]
    report = state / "gpu-incident-lab/no-state-yet/grade-report.json"
    assert json.loads(report.read_text())["steps"]["1"]["passed"] is False
    assert (state / "gpu-incident-lab/no-state-yet/grade-report.xml").read_text().startswith("<?xml")
    assert not root.exists()    # grading writes nothing in the lab folder
