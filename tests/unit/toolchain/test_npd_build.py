"""Kubernetes' node-problem-detector v1.34.0, built by toolchain/build.sh from the pin in
toolchain/node-problem-detector (issue 39, item A): CGO off, no `journald` tag, the version
stamped into pkg/version as upstream's Makefile does (v1.34.0 Makefile, ./bin/node-problem-detector)."""
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
TOOLCHAIN = ROOT / "toolchain"
MODULE, VERSION = "k8s.io/node-problem-detector", "v1.34.0"


def bin_dir():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return pathlib.Path(cache) / "gpu-incident-lab" / "bin"


def status(outdir, *names):
    done = subprocess.run([str(TOOLCHAIN / "build.sh"), "status", str(outdir)] + list(names),
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, BUILD_STATUS_READ_ONLY="1"))
    return done.returncode, done.stdout, done.stderr


def npd():
    path = bin_dir() / "node-problem-detector"
    if not os.access(path, os.X_OK):
        pytest.skip("node-problem-detector is not built: toolchain/build.sh node-problem-detector %s"
                    % bin_dir())
    return path


def test_the_pin_is_the_one_version():
    gomod = (TOOLCHAIN / "node-problem-detector" / "go.mod").read_text()
    assert re.search(r"^require %s %s$" % (re.escape(MODULE), VERSION), gomod, re.M), gomod[:400]


def test_status_names_it_only_when_asked(tmp_path):
    rc, out, _ = status(tmp_path)
    assert rc == 0 and "node-problem-detector" not in out  # the control plane's nine, as always
    rc, out, _ = status(tmp_path, "node-problem-detector")
    assert rc == 0 and out == "node-problem-detector %s missing\n" % VERSION


def test_built_binary_names_the_module_and_version():
    path = npd()
    out = subprocess.run(["go", "version", "-m", str(path)], capture_output=True, text=True,
                         check=True).stdout
    assert re.search(r"^\s+mod\s+%s\s+%s\s" % (re.escape(MODULE), VERSION), out, re.M), out
    assert "CGO_ENABLED=0" in out
    assert "journald" not in out  # no -tags journald: the watcher that needs cgo is left out
    version = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=True).stdout
    assert version.strip() == VERSION
    rc, line, _ = status(bin_dir(), "node-problem-detector")
    assert rc == 0 and line == "node-problem-detector %s ok\n" % VERSION
