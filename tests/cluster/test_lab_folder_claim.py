"""Two labs of one home never share a lab folder (issue 34: a lab is its cluster name and its
state location): lab.yml refuses the folder of another lab whose cluster is up, before it makes
or changes anything, naming that lab and the way out."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def test_lab_yml_refuses_the_lab_folder_of_another_running_lab(tmp_path):
    state, root, kwok = tmp_path / "state", tmp_path / "gpuop", tmp_path / "kwok"
    # lab "first" of this state location records tmp/gpuop and its cluster folder exists
    (state / "gpu-incident-lab/first").mkdir(parents=True)
    (state / "gpu-incident-lab/first/lab-root").write_text("%s\n" % root)
    (kwok / "clusters/first").mkdir(parents=True)
    env = dict(os.environ, XDG_STATE_HOME=str(state), ANSIBLE_FORCE_COLOR="0")
    out = subprocess.run([PLAYBOOK, "lab.yml", "-e", "lab_root=%s" % root, "-e", "lab_cluster_name=second",
                          "-e", "kwok_cluster_workdir=%s" % kwok, "-e", "lab_real_node=false"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    said = " ".join(out.stdout.split())
    assert out.returncode != 0 and "Another lab's lab folder is refused" in said, said[-3000:]
    assert "the lab folder %s is the lab folder of another lab, first" % root in said
    assert "-e lab_root=%s-second" % root in said
    # nothing made: no cluster, no lab folder, no state of the second lab
    assert not (kwok / "clusters/second").exists() and not root.exists()
    assert not (state / "gpu-incident-lab/second").exists()
