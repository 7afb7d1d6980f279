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


def test_grader_agrees_with_the_lab_under_other_settings(tmp_path):
    """lab.yml and grade.yml with the same non-default settings: every step passes."""
    name = "set-" + uuid.uuid4().hex[:6]
    extra = ["-e", "lab_root=%s" % (tmp_path / "gpuop"), "-e", "lab_cluster_name=%s" % name,
             "-e", "lab_timeslicing_replicas=3", "-e", "lab_physical_gpus=8",
             "-e", "lab_vram_per_gpu_gib=80", "-e", "lab_gpu_amount=2",
             "-e", "lab_observed_runtimes=['runc']", "-e", "lab_containerd_version=1.6"]
    try:
        out, recap = run("lab.yml", *extra)
        assert recap["failed"] == 0, out.stdout[-3000:]
        slots = (tmp_path / "gpuop/out/slots.txt").read_text()
        assert "REPLICAS=3\n" in slots and "ADVERTISED=24\n" in slots and "VRAM_PER_GPU_GIB=80\n" in slots
        out, recap = run("playbooks/grade.yml", *extra)
        assert recap["failed"] == 0 and "8 of 8 passed" in out.stdout, out.stdout[-3000:]
        # and the default settings against that lab disagree, naming the setting
        out, recap = run("playbooks/grade.yml", "-e", "lab_root=%s" % (tmp_path / "gpuop"),
                         "-e", "lab_cluster_name=%s" % name)
        assert recap["failed"] == 1 and "replicas must be 5 (found 3)" in out.stdout
    finally:
        run("playbooks/teardown.yml", *extra)


def test_a_component_that_exits_at_start_is_named_with_its_log(tmp_path):
    """kwok-controller refuses a KwokConfiguration without its Pod parallelism and exits right
    after kwokctl started it: the environment fails at once, naming it and its log line -
    not ten minutes later as nodes that never turned Ready."""
    name = "dead-" + uuid.uuid4().hex[:6]
    extra = ["-e", "lab_root=%s" % (tmp_path / "gpuop"), "-e", "lab_cluster_name=%s" % name,
             "-e", '{"kwok_cluster_kwok_options": {"nodePlayStageParallelism": 8}}']
    try:
        out, recap = run("lab.yml", "--tags", "environment", *extra)
        assert recap["failed"] == 1, out.stdout[-3000:]
        said = " ".join(out.stdout.split())  # the message is folded at a width that depends on paths
        assert "kwok-controller exited right after it started" in said, out.stdout[-3000:]
        # kwok's own words; which of its controllers refuses first varies from run to run
        # ("nodePlayStageParallelism ..." or "playStageParallelism must be greater than 0")
        assert re.search(r"parallelism must be greater than 0", said, re.I), out.stdout[-3000:]
        assert "Create the missing nodes" not in said  # it stopped before the nodes
    finally:
        run("playbooks/teardown.yml", *extra)
