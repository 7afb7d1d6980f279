"""drill.yml refuses an unknown drill before it reads or changes anything - lab-node-1's real
layer is mended or broken before the gpu_drills role's own check would run."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def drill_on_no_lab(tmp_path, drill):
    """drill.yml -e drill=DRILL on a lab that does not exist, its state and lab folders under tmp_path."""
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), ANSIBLE_FORCE_COLOR="0")
    return subprocess.run([PLAYBOOK, "playbooks/drill.yml", "-e", "drill=%s" % drill,
                           "-e", "lab_cluster_name=no-such-lab", "-e", "lab_root=%s" % (tmp_path / "gpuop")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_an_unknown_drill_is_refused_first(tmp_path):
    out = drill_on_no_lab(tmp_path, "plugin-unplugged")
    assert out.returncode != 0, out.stdout[-2000:]
    text = " ".join(out.stdout.split())
    assert "unknown drill 'plugin-unplugged'; the drills are: kernel-update," in text, out.stdout[-2000:]
    assert "ok=0" in text and "failed=1" in text, out.stdout[-2000:]   # its first task, nothing before
    assert not (tmp_path / "state").exists() and not (tmp_path / "gpuop").exists()


def test_a_mig_drill_is_refused_without_lab_node_1_s_gpu_half(tmp_path):
    """The MIG drills (real_only) break nothing where lab-node-1's GPU half does not run: the
    stand-ins have no MIG."""
    out = drill_on_no_lab(tmp_path, "mig-layout-busy")
    assert out.returncode != 0, out.stdout[-2000:]
    text = " ".join(out.stdout.split())
    assert "mig-layout-busy needs lab-node-1's own GPU half" in text and "Nothing was changed." in text, out.stdout[-2000:]
    assert "changed=0" in text and "failed=1" in text, out.stdout[-2000:]
    assert not (tmp_path / "state").exists() and not (tmp_path / "gpuop").exists()
