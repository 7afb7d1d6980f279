"""Each component version is defined once (toolchain/versions.env) and agrees with the pins that
build it and with what the binaries report."""
import re
from lab_testing import ROOT  # tests/lab_testing.py

import versions


def test_the_built_containerds_are_the_go_mod_pins():
    v = versions.versions()
    for key in ("CONTAINERD_2", "CONTAINERD_24"):
        assert versions.go_mod_version(v[key + "_MODULE_DIR"]) == v[key], key


def test_the_oracles_report_their_versions(containerd_oracle, containerd2_oracle, containerd24_oracle):
    v = versions.versions()
    assert versions.reported(containerd_oracle) == v["CONTAINERD_DEBIAN"]
    assert versions.reported(containerd2_oracle) == v["CONTAINERD_2"]
    assert versions.reported(containerd24_oracle) == v["CONTAINERD_24"]


def test_an_oracle_of_another_version_is_refused(tmp_path):
    """A containerd that reports 1.7.24 (what Debian 13's apt would give) is refused by name."""
    import pytest
    fake = tmp_path / "containerd"
    fake.write_text("#!/bin/sh\necho 'containerd github.com/containerd/containerd 1.7.24~ds1 1.7.24~ds1-6'\n")
    fake.chmod(0o755)
    with pytest.raises(pytest.fail.Exception) as refused:
        versions.checked(str(fake), "CONTAINERD_DEBIAN")
    assert "reports containerd 1.7.24, the oracle must be 1.6.20" in str(refused.value)


def test_the_lab_and_the_makefile_read_the_one_definition():
    """No second copy of a containerd version in the Makefile or the lab's settings."""
    make = (ROOT / "Makefile").read_text()
    assert "include toolchain/versions.env" in make
    assert not re.search(r"^[^#\n]*\b1\.6\.20\b", make, re.M)
    lab = (ROOT / "inventory/group_vars/all/lab.yml").read_text()
    assert "\nlab_node_containerd: debian\n" in lab          # the real node resolves it from versions.env
    assert not re.search(r"^[^#\n]*\b1\.6\.20\b", lab, re.M)
