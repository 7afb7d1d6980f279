"""supervise.sh (node_runner/): the node's daemons' supervisor - how a process ended, and the
restart policy that stands in for containerd.service's Restart=always (issue 49: containerd ends
on NVIDIA's installer's SIGHUP and systemd starts it again)."""
import os
import signal
import subprocess

from lab_testing import ROOT, wait_for

SUPERVISE = ROOT / "node_runner/supervise.sh"
# the supervised "daemon": it sleeps until a signal ends it (default handling, as containerd for SIGHUP)
DAEMON = ["sleep", "600"]


def pid_of(state, name="d", old=None, timeout=10):
    """The supervised process's pid, once the supervisor wrote it (and it is not `old`)."""
    def written():
        try:
            pid = int((state / (name + ".pid")).read_text())
        except (OSError, ValueError):
            return None
        return pid if pid != old and os.path.exists("/proc/%d" % pid) else None
    return wait_for("supervise.sh to write a new pid for %s" % name, written, timeout, interval=0.05)


def start(state, *wrapper):
    log = open(state / "d.log", "w")
    return subprocess.Popen([*wrapper, "bash", str(SUPERVISE), "d", str(state), str(state / "none.list"), "--", *DAEMON],
                            stdout=log, stderr=subprocess.STDOUT)


def test_without_a_policy_an_ended_process_is_recorded_and_not_started_again(tmp_path):
    sup = start(tmp_path)
    pid = pid_of(tmp_path)
    os.kill(pid, signal.SIGHUP)
    assert sup.wait(timeout=10) == 0
    assert (tmp_path / "d.exit").read_text().strip() == "129"      # 128 + SIGHUP
    assert not (tmp_path / "d.restarts").exists()


def test_restart_always_starts_it_again_after_restartsec_and_a_stop_is_a_stop(tmp_path):
    (tmp_path / "d.restart").write_text("always 1\ntouch %s\n" % (tmp_path / "pre-start-ran"))
    sup = start(tmp_path)
    first = pid_of(tmp_path)
    os.kill(first, signal.SIGHUP)
    second = pid_of(tmp_path, old=first)
    assert (tmp_path / "d.restarts").read_text().strip() == "1" and (tmp_path / "pre-start-ran").exists()
    said = (tmp_path / "d.log").read_text()
    assert "supervise.sh: d exited with status 129; Restart=always: starting it again in 1 s (restart 1" in said
    # a TERM for the supervisor stops the process and the supervisor, with no restart after it
    sup.send_signal(signal.SIGTERM)
    assert sup.wait(timeout=10) == 0 and not os.path.exists("/proc/%d" % second)
    assert (tmp_path / "d.restarts").read_text().strip() == "1"
    # the policy removed: the next end is the last
    (tmp_path / "d.restart").unlink()
    sup = start(tmp_path)
    os.kill(pid_of(tmp_path), signal.SIGKILL)
    assert sup.wait(timeout=10) == 0 and (tmp_path / "d.exit").read_text().strip() == "137"


def test_a_signal_the_caller_ignored_is_not_inherited(tmp_path):
    """Started under nohup (SIGHUP ignored), the daemon still ends on SIGHUP - as a systemd unit
    would; bash alone cannot reset an ignored signal, so a containerd started from such a shell
    ignored NVIDIA's installer's SIGHUP."""
    sup = start(tmp_path, "env", "--ignore-signal=HUP")
    pid = pid_of(tmp_path)
    ignored = int(open("/proc/%d/status" % pid).read().split("SigIgn:")[1].split()[0], 16)
    assert not ignored & 1
    os.kill(pid, signal.SIGHUP)
    assert sup.wait(timeout=10) == 0 and (tmp_path / "d.exit").read_text().strip() == "129"
