"""Fixtures the unit tests of several packages share (tests/conftest.py has the project-wide ones:
the module runner, the containerd oracles): a real containerd 1.6.20 daemon asked by a real crictl,
used by tests/unit/library/test_gpu_node_facts.py and tests/unit/bundle/test_gpu_support_bundle.py.
"""
import os
import pathlib
import shutil
import subprocess

import pytest

from lab_testing import ROOT, wait_for


def crictl_path():
    for candidate in (os.environ.get("CRICTL"), str(ROOT / ".cache/crictl/crictl"), shutil.which("crictl")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture
def crictl():
    path = crictl_path()
    if path is None:
        pytest.skip("crictl not found: GOBIN=$PWD/.cache/crictl go install "
                    "sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0 (or set CRICTL)")
    return path


MAIN = """version = 2
root = "{d}/root"
state = "{d}/state"
imports = ["{d}/conf.d/*.toml"]
[grpc]
  address = "{d}/containerd.sock"
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
"""


@pytest.fixture
def daemon(containerd_oracle, crictl):
    if os.geteuid() != 0:
        pytest.skip("a containerd daemon needs root")
    import tempfile
    d = pathlib.Path(tempfile.mkdtemp(prefix="gnf-", dir="/tmp"))   # short: a unix socket path
    (d / "conf.d").mkdir()
    (d / "config.toml").write_text(MAIN.format(d=d))
    log = open(d / "containerd.log", "wb")
    proc = subprocess.Popen([containerd_oracle, "--config", str(d / "config.toml")], stdout=log,
                            stderr=subprocess.STDOUT)
    endpoint = "unix://%s/containerd.sock" % d

    def serving():   # True once CRI answers; a word when the daemon is gone (no use waiting on)
        if proc.poll() is not None:
            return "containerd exited"
        return subprocess.run([crictl, "--runtime-endpoint", endpoint, "info"], capture_output=True).returncode == 0

    try:
        served = wait_for("containerd to serve CRI at %s" % endpoint, serving, 30, interval=0.2)
    except pytest.fail.Exception as timed_out:
        served = str(timed_out)
    if served is not True:
        proc.kill()
        pytest.fail("containerd did not serve CRI within 30 s (%s): %s" % (served, (d / "containerd.log").read_text()[-2000:]))
    yield d, endpoint, proc
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()
    shutil.rmtree(d, ignore_errors=True)
