"""The component versions the project runs, from their one definition (toolchain/versions.env)."""
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def versions():
    out = {}
    for line in (ROOT / "toolchain/versions.env").read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def go_mod_version(folder, module="github.com/containerd/containerd/v2"):
    """The version a toolchain folder's go.mod pins for a module (the build's own pin)."""
    text = (ROOT / "toolchain" / folder / "go.mod").read_text()
    found = re.search(r"^\s*(?:require\s+)?%s\s+v(\S+)" % re.escape(module), text, re.M)
    return found.group(1) if found else None


def reported(binary):
    """What `containerd --version` says: the version word (1.6.20, 2.2.0+unknown -> 2.2.0)."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    words = out.stdout.split()
    return words[2].lstrip("v").split("+")[0].split("~")[0] if len(words) >= 3 else out.stdout.strip()


def checked(path, key):
    """The oracle at path, refused (naming what it is) unless it reports the version the project
    defines for it - an oracle of another version would silently judge another containerd."""
    want = versions()[key]
    found = reported(path)
    if found != want:
        pytest.fail("%s reports containerd %s, the oracle must be %s (toolchain/versions.env %s): "
                    "on another Debian release apt gives another containerd; point the variable at a "
                    "%s binary or rebuild it (make clean oracle oracle2 oracle24)" % (path, found, want, key, want))
    return path
