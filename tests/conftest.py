"""Shared test setup: our modules and module_utils importable as Ansible sees them."""
import os
import pathlib
import shutil
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "library"))
sys.path.insert(0, str(ROOT / "module_utils"))
sys.path.insert(0, str(ROOT / "tests"))

import ansible.module_utils  # noqa: E402

import versions as _versions  # noqa: E402  (tests/versions.py: toolchain/versions.env)

# modules import `ansible.module_utils.<ours>`: make that resolve to module_utils/
ansible.module_utils.__path__.append(str(ROOT / "module_utils"))


def lab_cache():
    """Where the lab keeps what it builds, per machine (the Makefile's LAB_CACHE)."""
    return pathlib.Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "gpu-incident-lab"


def oracle_path():
    """The real containerd 1.6.20 used as the oracle (make oracle installs it)."""
    candidates = [os.environ.get("CONTAINERD_ORACLE"),
                  str(ROOT / ".cache/containerd/usr/bin/containerd"),
                  shutil.which("containerd")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="session")
def containerd_oracle():
    path = oracle_path()
    if path is None:
        pytest.fail("real containerd 1.6 not found: run `make oracle` (unpacks Debian's "
                    "containerd package into .cache/containerd) or set CONTAINERD_ORACLE")
    return _versions.checked(path, "CONTAINERD_DEBIAN")


@pytest.fixture(scope="session")
def containerd2_oracle():
    """containerd 2.2.0 built from toolchain/containerd2 (make oracle2: the lab's cache, where the
    real node's containerd 2.2.0 is the same binary)."""
    import glob
    candidates = [os.environ.get("CONTAINERD2_ORACLE"),
                  str(lab_cache() / ("containerd-%s/containerd" % _versions.versions()["CONTAINERD_2"]))]
    path = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
    if path is None:
        pytest.fail("containerd 2.2.0 not found: run `make oracle2` (builds it from "
                    "toolchain/containerd2) or set CONTAINERD2_ORACLE")
    stray = glob.glob("/etc/containerd/conf.d/*.toml")
    if stray:  # containerd 2.x imports these by default: they would join every case
        pytest.fail("%s exist; containerd 2.x imports /etc/containerd/conf.d/*.toml by "
                    "default, so the oracle would read them too" % ", ".join(stray))
    return _versions.checked(path, "CONTAINERD_2")


@pytest.fixture(scope="session")
def containerd24_oracle():
    """containerd 2.4.2 built from toolchain/containerd24 (make oracle24): 2.3+ migrates each
    file before merging."""
    import glob
    candidates = [os.environ.get("CONTAINERD24_ORACLE"),
                  str(lab_cache() / ("containerd-%s/containerd" % _versions.versions()["CONTAINERD_24"]))]
    path = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
    if path is None:
        pytest.fail("containerd 2.4.2 not found: run `make oracle24` (builds it from "
                    "toolchain/containerd24) or set CONTAINERD24_ORACLE")
    if glob.glob("/etc/containerd/conf.d/*.toml"):
        pytest.fail("/etc/containerd/conf.d/*.toml exist; containerd 2.x imports them by default")
    return _versions.checked(path, "CONTAINERD_24")


@pytest.fixture
def module_runner():
    """Run an AnsibleModule's main() with args; return (ok, result dict)."""
    import json
    from ansible.module_utils import basic
    from ansible.module_utils.testing import patch_module_args

    class Exit(Exception):
        pass

    def run(main, args, check_mode=False, diff=False):
        args = dict(args)
        if check_mode:
            args["_ansible_check_mode"] = True
        if diff:
            args["_ansible_diff"] = True
        out = {}

        def exit_json(self, **kwargs):
            out.update(kwargs, failed=False)
            raise Exit()

        def fail_json(self, msg, **kwargs):
            out.update(kwargs, msg=msg, failed=True)
            raise Exit()

        orig_exit, orig_fail = basic.AnsibleModule.exit_json, basic.AnsibleModule.fail_json
        basic.AnsibleModule.exit_json, basic.AnsibleModule.fail_json = exit_json, fail_json
        try:
            with patch_module_args(args):
                try:
                    main()
                except Exit:
                    pass
        finally:
            basic.AnsibleModule.exit_json, basic.AnsibleModule.fail_json = orig_exit, orig_fail
        json.dumps(out, default=str)
        return out

    return run
