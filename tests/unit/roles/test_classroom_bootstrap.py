"""roles/classroom_trainee/files/bootstrap.sh: a trainee host's Python, found without Python.

Each case runs the script with a PATH of its own: stand-ins for python3 (with or without
PyYAML), id (root or not) and apt-get, plus the few real tools the script uses.
"""
import json
import os
import shutil
import subprocess
from lab_testing import ROOT  # tests/lab_testing.py

SCRIPT = ROOT / "roles/classroom_trainee/files/bootstrap.sh"


def stub(folder, name, body):
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def host(tmp_path, python=None, uid=1000):
    """A PATH folder standing for a host: real mkdir/tail/tr/chmod, id saying uid, maybe a python3."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("mkdir", "tail", "tr", "chmod"):
        os.symlink(shutil.which(tool), tools / tool)
    stub(tools, "id", 'case "$1" in -u) echo %d ;; -un) echo trainee ;; esac' % uid)
    if python == "with-yaml":
        stub(tools, "python3", 'exit 0')
    elif python == "without-yaml":
        stub(tools, "python3", 'case "$*" in *"-m venv"*) mkdir -p "$3/bin"; printf "#!/bin/sh\\nexit 0\\n" > "$3/bin/python";'
                               ' chmod +x "$3/bin/python"; echo "venv made";; *) exit 1;; esac')
    return tools


def run(tools, home, mode, venv="~/.cache/gpu-incident-lab/venv"):
    out = subprocess.run(["/bin/sh", str(SCRIPT), venv, "6.0.3", mode], capture_output=True, text=True,
                         env={"PATH": str(tools), "HOME": str(home)}, timeout=30)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_systems_python_with_pyyaml_is_used_as_it_is(tmp_path):
    tools = host(tmp_path, "with-yaml")
    found = run(tools, tmp_path, "install")
    assert found == {"home": str(tmp_path), "user": "trainee", "python": str(tools / "python3"),
                     "root": False, "changed": False, "error": ""}
    assert not (tmp_path / ".cache").exists()


def test_without_pyyaml_install_makes_a_venv_and_read_only_says_so(tmp_path):
    tools = host(tmp_path, "without-yaml")
    refused = run(tools, tmp_path, "read-only")
    assert refused["python"] == "" and "has no PyYAML and there is no %s/.cache/gpu-incident-lab/venv yet" % tmp_path \
        in refused["error"] and "run playbooks/classroom.yml for this host first" in refused["error"]
    assert not (tmp_path / ".cache").exists()
    made = run(tools, tmp_path, "install")
    venv_python = tmp_path / ".cache/gpu-incident-lab/venv/bin/python"
    assert made["python"] == str(venv_python) and made["changed"] is True and made["error"] == ""
    # the stand-in pip ran too (python -m pip install PyYAML==6.0.3 through the venv's python)
    again = run(tools, tmp_path, "install")
    assert again["python"] == str(venv_python) and again["changed"] is False


def test_a_venv_that_cannot_be_made_is_named_with_its_log(tmp_path):
    tools = host(tmp_path)
    stub(tools, "python3", "exit 1")   # no PyYAML, no venv module
    failed = run(tools, tmp_path, "install")
    assert failed["python"] == "" and "could not make a Python venv with PyYAML in %s/.cache/gpu-incident-lab/venv" \
        % tmp_path in failed["error"] and "python3-venv" in failed["error"]


def test_no_python3_and_no_root(tmp_path):
    tools = host(tmp_path)
    found = run(tools, tmp_path, "install")
    assert found["root"] is False and found["python"] == ""
    assert found["error"].startswith("no python3 on this host (and no root to install it)")


def test_root_without_python3_gets_debians_packages(tmp_path):
    tools = host(tmp_path, uid=0)
    log = tmp_path / "apt.log"
    stub(tools, "env", 'shift; "$@"')   # env DEBIAN_FRONTEND=... apt-get ...
    stub(tools, "apt-get", 'echo "$*" >> %s; printf "#!/bin/sh\\nexit 0\\n" > %s/python3; chmod +x %s/python3'
         % (log, tools, tools))
    found = run(tools, tmp_path, "install")
    assert "install -y -qq python3 python3-venv python3-yaml" in log.read_text()
    assert found["root"] is True and found["changed"] is True and found["python"] == str(tools / "python3")
