"""roles/kwok_cluster/files/components.sh `up`: labs on one machine take turns at kwokctl create.

kwokctl v0.8.0 picks its components' ports by probing (listen, close) downwards from 32767
(pkg/utils/net/unused_port.go), so two labs created in the same moment picked the same ports.
`up` holds a machine-wide flock from kwokctl's start until the API server answers; the
components kwokctl leaves running must not inherit it.
"""
import fcntl
import json
import os
import subprocess
from pathlib import Path
from lab_testing import ROOT  # tests/lab_testing.py

SCRIPT = ROOT / "roles" / "kwok_cluster" / "files" / "components.sh"


def fake(path, body):
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def up(tmp_path, kwokctl, timeout=5):
    (tmp_path / "cluster" / "pids").mkdir(parents=True, exist_ok=True)
    kubectl = fake(tmp_path / "kubectl", "exit 0")     # the API server answers /readyz
    env = dict(os.environ, COMPONENTS_LOCK=str(tmp_path / "create.lock"))
    return subprocess.run(["bash", str(SCRIPT), "up", str(timeout), str(tmp_path / "cluster"), kubectl,
                           str(tmp_path / "kubeconfig"), kwokctl], env=env, capture_output=True, text=True,
                          timeout=60)


def test_a_create_waits_for_another_lab_s_turn_and_says_what_it_waited_for(tmp_path):
    kwokctl = fake(tmp_path / "kwokctl", "touch %s" % (tmp_path / "ran"))
    with open(tmp_path / "create.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)              # another lab in its kwokctl create
        result = up(tmp_path, kwokctl, timeout=1)
    assert result.returncode == 75, result
    assert "waited 1s for another lab's kwokctl" in result.stderr and str(tmp_path / "create.lock") in result.stderr
    assert not (tmp_path / "ran").exists()          # kwokctl never ran: no port was probed


def test_the_turn_ends_with_the_wait_and_the_components_left_running_do_not_hold_it(tmp_path):
    # a kwokctl that leaves a detached component behind, as kwokctl's binary runtime does
    component = tmp_path / "component.pid"
    kwokctl = fake(tmp_path / "kwokctl", "sleep 60 >/dev/null 2>&1 &\necho $! > %s" % component)
    try:
        result = up(tmp_path, kwokctl)
        assert result.returncode == 0, result
        assert json.loads(result.stdout)["ready"] is True
        pid = int(component.read_text())
        assert Path("/proc/%d" % pid).exists()          # the component still runs ...
        with open(tmp_path / "create.lock") as lock:    # ... and the next lab gets its turn at once
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        if component.exists():
            subprocess.run(["kill", component.read_text().strip()], check=False)
