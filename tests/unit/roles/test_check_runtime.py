"""check-runtime.sh: run for real, with a fake containerd first on PATH (as the
original grader does) and with the real containerd 1.6.20 on the lab's files."""
import os
import re
import stat
import subprocess
from lab_testing import ROOT  # tests/lab_testing.py

import pytest

SCRIPT = ROOT / "roles/runtime_check/files/check-runtime.sh"

DUMP_1X = """version = 2
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
{runtimes}
"""
RT_1X = """        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{name}]
          runtime_type = "io.containerd.runc.v2"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{name}.options]
            SystemdCgroup = true
"""
DUMP_2X = """version = 3
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.{name}]
  runtime_type = 'io.containerd.runc.v2'
"""


def dump_with(*names):
    return DUMP_1X.format(runtimes="".join(RT_1X.format(name=n) for n in names))


def fake_containerd(folder, stdout="", exit_code=0, stderr=""):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dump.txt").write_text(stdout)
    (folder / "err.txt").write_text(stderr)
    script = folder / "containerd"
    script.write_text("#!/bin/sh\n[ \"$1 $2\" = 'config dump' ] || exit 99\n"
                      "cat '%s'\ncat '%s' >&2\nexit %d\n"
                      % (folder / "dump.txt", folder / "err.txt", exit_code))
    script.chmod(0o755)
    return folder


def run(path_dirs, *args):
    env = dict(os.environ, PATH=":".join([str(d) for d in path_dirs] + ["/usr/bin", "/bin"]))
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True,
                          timeout=30)


def test_script_is_executable_and_never_names_the_config_file():
    assert SCRIPT.stat().st_mode & stat.S_IXUSR
    text = SCRIPT.read_text()
    assert "/etc/containerd/config.toml" not in text
    assert not re.search(r"/[^\s'\"]*bin/containerd\b", text)


@pytest.mark.parametrize("names,expected", [
    ((), 1),
    (("runc",), 1),
    (("runc", "nvidia"), 0),
    (("nvidia",), 0),
    (("nvidia-cdi", "nvidia-legacy"), 1),
    (("runc", "nvidia-experimental"), 1),
])
def test_two_runs_with_a_fake_containerd(tmp_path, names, expected):
    fake = fake_containerd(tmp_path / "bin", dump_with(*names))
    result = run([fake])
    assert result.returncode == expected, result.stderr
    if expected == 1:
        assert "NOT loaded" in result.stderr


def test_comment_and_value_do_not_count(tmp_path):
    dump = dump_with("runc") + (
        '# [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        'note = "[plugins.\\"io.containerd.grpc.v1.cri\\".containerd.runtimes.nvidia]"\n')
    assert run([fake_containerd(tmp_path / "bin", dump)]).returncode == 1


def test_containerd_2x_spelling(tmp_path):
    assert run([fake_containerd(tmp_path / "a", DUMP_2X.format(name="nvidia"))]).returncode == 0
    assert run([fake_containerd(tmp_path / "b", DUMP_2X.format(name="nvidia-cdi"))]).returncode == 1


def test_runtime_name_argument(tmp_path):
    fake = fake_containerd(tmp_path / "bin", dump_with("runc", "kata"))
    assert run([fake], "kata").returncode == 0
    assert run([fake], "runc").returncode == 0
    assert run([fake], "nvidia").returncode == 1
    assert run([fake], "bad name;rm").returncode == 2


def test_missing_containerd_is_an_error_not_a_pass(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    env = dict(os.environ, PATH=str(empty))
    result = subprocess.run(["/bin/bash", str(SCRIPT)], env=env, capture_output=True, text=True)
    assert result.returncode == 2
    assert "containerd not found" in result.stderr


def test_failing_dump_is_an_error_not_a_pass(tmp_path):
    fake = fake_containerd(tmp_path / "bin", dump_with("nvidia"), exit_code=1,
                           stderr="failed to load TOML: x")
    result = run([fake])
    assert result.returncode == 2
    assert "failed to load TOML" in result.stderr


def test_empty_dump_is_an_error(tmp_path):
    assert run([fake_containerd(tmp_path / "bin", "")]).returncode == 2


def lab_pair(folder, with_dropin=True):
    (folder / "conf.d").mkdir(parents=True)
    (folder / "config.toml").write_text(
        'version = 2\nimports = ["%s/conf.d/*.toml"]\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        '  runtime_type = "io.containerd.runc.v2"\n' % folder)
    if with_dropin:
        (folder / "conf.d/99-nvidia.toml").write_text(
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"\n')
    return folder / "config.toml"


def real_wrapper(folder, oracle, config):
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "containerd"
    wrapper.write_text('#!/bin/sh\nexec "%s" --config "%s" "$@"\n' % (oracle, config))
    wrapper.chmod(0o755)
    return folder


def test_against_real_containerd_1_6(tmp_path, containerd_oracle):
    with_dropin = real_wrapper(tmp_path / "w1", containerd_oracle, lab_pair(tmp_path / "a"))
    without = real_wrapper(tmp_path / "w2", containerd_oracle, lab_pair(tmp_path / "b", False))
    assert run([with_dropin]).returncode == 0
    # the incident: on 1.6 the drop-in replaces the CRI table, runc is gone after a restart
    result = run([with_dropin], "runc")
    assert result.returncode == 1 and "nvidia" in result.stderr
    assert run([without]).returncode == 1
    assert run([without], "runc").returncode == 0
