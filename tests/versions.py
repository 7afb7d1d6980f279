"""The component versions the project runs, from their one definition (toolchain/versions.env)."""
import pathlib
import re
import subprocess

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
