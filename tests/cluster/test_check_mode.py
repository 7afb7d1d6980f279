"""`ansible-playbook lab.yml --check --diff` on a fresh lab folder and on a finished lab.

A fresh target: no cluster, no lab folder - check mode reports what it would write, writes
nothing, creates no cluster and does not fail. A finished lab: check mode reports changed=0.
Uses a lab folder and a cluster name of its own (never the trainee's).
"""
import os
import pathlib
import re
import subprocess
import sys
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run(*args):
    out = subprocess.run([PLAYBOOK, *args], cwd=ROOT, capture_output=True, text=True, timeout=900,
                         env=dict(os.environ, ANSIBLE_FORCE_COLOR="0"))
    recap = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)",
                      out.stdout)
    assert recap, out.stdout[-3000:] + out.stderr[-2000:]
    return out, {k: int(v) for k, v in zip(("ok", "changed", "unreachable", "failed"), recap.groups())}


def test_check_mode_fresh_then_finished(tmp_path):
    name = "chk-" + uuid.uuid4().hex[:6]
    lab = tmp_path / "gpuop"
    extra = ["-e", "lab_root=%s" % lab, "-e", "lab_cluster_name=%s" % name]
    cluster_dir = pathlib.Path.home() / ".kwok" / "clusters" / name
    try:
        out, recap = run("lab.yml", "--check", "--diff", *extra)
        assert recap["failed"] == 0, out.stdout[-3000:]
        assert recap["changed"] > 0                                  # it says what it would do
        assert "+version = 2" in out.stdout                           # the diff of config.toml
        assert "does not exist yet" in out.stdout                     # said plainly, not failed
        assert not lab.exists() and not cluster_dir.exists()          # and did nothing
        out, recap = run("lab.yml", *extra)
        assert recap["failed"] == 0, out.stdout[-3000:]
        out, recap = run("lab.yml", "--check", "--diff", *extra)
        assert recap["failed"] == 0 and recap["changed"] == 0, out.stdout[-3000:]
    finally:
        run("playbooks/teardown.yml", *extra)
    assert not cluster_dir.exists()
