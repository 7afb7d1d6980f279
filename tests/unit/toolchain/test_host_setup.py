"""What `make lab` and `make test` need on the host (issue 41): toolchain/host-setup.sh installs
the one list's missing packages or stops before anything, naming them and the command that
installs them; tools/host_programs.py finds every program the stages call and who provides it."""
# host_programs: not scanned
import os
import subprocess
import sys
from pathlib import Path
from lab_testing import ROOT  # tests/lab_testing.py

import pytest

SETUP = ROOT / "toolchain/host-setup.sh"
sys.path.insert(0, str(ROOT / "tools"))
import host_programs  # noqa: E402  tools/host_programs.py


def test_every_program_the_stages_call_has_a_provider():
    calls = host_programs.programs_called()
    # the scanner sees the programs this suite is known to call (so an empty scan cannot pass)
    for name in ("shellcheck", "chromium", "sshd", "ssh-keygen", "gcc", "openssl", "go"):
        assert name in calls, name
    missing = host_programs.unprovided(calls, host_programs.providers())
    assert not missing, "called by a stage, provided by nothing (add to toolchain/host-packages): %s" % missing


def test_the_setup_list_provides_what_ci_installed_before_issue_41():
    given = host_programs.setup_list()
    for program, package in {"shellcheck": "shellcheck", "sshd": "openssh-server", "gcc": "gcc libc6-dev",
                             "ip": "iproute2", "chromium": "chromium"}.items():
        assert given.get(program) == package


def write_tree(root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def test_a_new_tool_in_a_recipe_or_a_test_is_caught(tmp_path):
    write_tree(tmp_path, {
        "toolchain/host-packages": "test  cmd:shellcheck  shellcheck  lint\n",
        "Makefile": ("lint:\n\tshellcheck x.sh\n\techo \"run jq; Debian says\" && \\\n"
                     "\t  jq . x.json\n\tFOO=1 env yq -r . y.yml | sort\n"),
        "tests/test_new.py": 'import subprocess\nsubprocess.run(["hadolint", "Dockerfile"])\n',
        "tests/other.sh": "#!/bin/sh\ncommand -v promtool >/dev/null\n",
    })
    calls = host_programs.programs_called(tmp_path)
    missing = host_programs.unprovided(calls, host_programs.providers(tmp_path))
    assert missing == {"hadolint": ["tests/test_new.py:2"], "jq": ["Makefile:3"], "promtool": ["tests/other.sh:2"],
                       "yq": ["Makefile:5"]}
    assert "Debian" not in calls and "run" not in calls   # an echo's words are not commands


def stubs(tmp_path, uid=1000, sudo_ok=False, apt_ok=True, go_version="go1.26.8"):
    """A PATH whose id, sudo, apt-get and go are the test's; apt-get logs its calls and, when it
    succeeds, makes the programs it was asked for."""
    bin_dir = tmp_path / "stubs"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    scripts = {
        "id": "echo %d" % uid,
        "sudo": 'shift; "$@"' if sudo_ok else "exit 1",
        "go": 'echo "%s"' % go_version,
        "apt-get": ('echo "$*" >> %s\n' % log + ('case "$1" in install) for p in "$@"; do case "$p" in -*|install) ;; '
                                                 '*) printf "#!/bin/sh\\n" > %s/"$p-cmd"; chmod +x %s/"$p-cmd";; esac; done;; esac'
                                                 % (bin_dir, bin_dir) if apt_ok else 'echo "E: Unable to locate package"; exit 100')),
        "dpkg-deb": "exit 0",
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text("#!/bin/sh\n%s\n" % body)
        (bin_dir / name).chmod(0o755)
    return bin_dir, log


LIST = ("lab   cmd:true                 coreutils   always there\n"
        "test  cmd:fakepkg-cmd          fakepkg     the test's missing tool\n"
        "test  cmd:other-cmd,true       other,extra two packages for one check\n")


def run_setup(tmp_path, stage, bin_dir, listing=LIST):
    (tmp_path / "list").write_text(listing)
    env = dict(os.environ, PATH="%s:/usr/bin:/bin" % bin_dir, HOST_PACKAGES=str(tmp_path / "list"),
               PYTHON=sys.executable, TMPDIR=str(tmp_path))
    return subprocess.run(["bash", str(SETUP), stage], env=env, capture_output=True, text=True)


def test_without_root_it_stops_before_anything_and_names_the_command(tmp_path):
    bin_dir, log = stubs(tmp_path)
    out = run_setup(tmp_path, "test", bin_dir)
    assert out.returncode == 1
    assert "needs root" in out.stderr and "nothing was done" in out.stderr
    assert "fakepkg (the test's missing tool)" in out.stderr
    assert "other extra (two packages for one check)" in out.stderr
    assert "sudo apt-get install -y fakepkg other extra" in out.stderr
    assert not log.exists(), "apt-get was called without root"
    assert "command not found" not in out.stderr


def test_as_root_it_installs_what_is_missing_saying_why(tmp_path):
    bin_dir, log = stubs(tmp_path, uid=0)
    out = run_setup(tmp_path, "test", bin_dir)
    assert out.returncode == 0, out.stderr
    assert "installing with apt-get" in out.stdout and "the test's missing tool" in out.stdout
    assert log.read_text().split("\n")[0] == "install -y -qq fakepkg other extra"
    assert "installed fakepkg other extra" in out.stdout


def test_with_password_less_sudo_it_installs_through_sudo(tmp_path):
    bin_dir, log = stubs(tmp_path, sudo_ok=True)
    out = run_setup(tmp_path, "test", bin_dir)
    assert out.returncode == 0, out.stderr
    assert log.read_text().startswith("install -y -qq fakepkg other extra")


def test_when_apt_get_fails_it_updates_once_then_refuses(tmp_path):
    bin_dir, log = stubs(tmp_path, uid=0, apt_ok=False)
    out = run_setup(tmp_path, "test", bin_dir)
    assert out.returncode == 1
    assert [l.split()[0] for l in log.read_text().splitlines()] == ["install", "update"]
    assert "apt-get could not install them" in out.stderr and "Unable to locate package" in out.stderr
    assert "sudo apt-get install -y fakepkg other extra" in out.stderr


def test_lab_takes_only_its_own_lines_and_a_complete_host_installs_nothing(tmp_path):
    bin_dir, log = stubs(tmp_path, uid=0)
    out = run_setup(tmp_path, "lab", bin_dir)
    assert out.returncode == 0 and "nothing to install" in out.stdout
    assert not log.exists()


@pytest.mark.parametrize("version, said", [("go1.19.8", "Go 1.26+ is needed"), (None, "Go 1.26+ is not on PATH")])
def test_go_too_old_or_missing_is_named_before_anything(tmp_path, version, said):
    bin_dir, log = stubs(tmp_path, uid=0, go_version=version or "x")
    if version is None:
        (bin_dir / "go").unlink()
        # a PATH without any other go: only the stubs and the base system
        assert not any(Path(d, "go").exists() for d in ("/usr/bin", "/bin"))
    out = run_setup(tmp_path, "test", bin_dir)
    assert out.returncode == 1 and said in out.stderr and "nothing was done" in out.stderr
    assert not log.exists()


def test_a_bad_stage_or_check_kind_is_refused(tmp_path):
    bin_dir, _ = stubs(tmp_path, uid=0)
    assert run_setup(tmp_path, "prod", bin_dir).returncode == 2
    out = run_setup(tmp_path, "lab", bin_dir, listing="lab  rpm:foo  foo  why\n")
    assert out.returncode == 2 and "unknown check 'rpm:foo'" in out.stderr


def test_the_readme_names_every_package_of_the_list():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("**Before the two commands**", 1)[1].split("\n\n", 1)[0]
    packages = {p for line in (ROOT / "toolchain/host-packages").read_text().splitlines()
                if line.split() and not line.startswith("#") for p in line.split()[2].split(",")}
    assert packages and not [p for p in packages if p not in section]
