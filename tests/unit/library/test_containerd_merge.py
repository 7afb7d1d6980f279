"""containerd_merge: the module's contract (the oracle test covers semantics)."""
import os
import pathlib

import pytest

import containerd_merge
from ansible.module_utils.containerd import loader as cc
from ansible.module_utils.containerd import merge as cm

MAIN = '''version = 2
imports = ["{dir}/conf.d/*.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
'''
DROPIN = '''[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    SystemdCgroup = true
'''
EXPECTED_REPORT = ('MAIN_RUNTIMES=runc\nDROPIN_RUNTIMES=nvidia\nCONFLICT=yes\n'
                   'CONFLICT_TABLE=plugins."io.containerd.grpc.v1.cri".containerd.runtimes\n'
                   'LOADED_RUNTIMES=runc\n')


@pytest.fixture
def lab(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "config.toml").write_text(MAIN.format(dir=tmp_path))
    (tmp_path / "conf.d/99-nvidia.toml").write_text(DROPIN)
    return tmp_path


def args(lab, **extra):
    base = {"path": str(lab / "config.toml"), "containerd_version": "1.6"}
    base.update(extra)
    return base


def test_judges_the_incident_pair(lab, module_runner):
    out = module_runner(containerd_merge.main, args(lab, observed_runtimes=["runc"]))
    assert not out["failed"]
    assert out["main_runtimes"] == ["runc"]
    assert out["dropin_runtimes"] == ["nvidia"]
    assert out["dropin_files"] == [str(lab / "conf.d/99-nvidia.toml")]
    assert out["conflict"] is True
    assert out["conflict_tables"] == ['plugins."io.containerd.grpc.v1.cri".containerd.runtimes']
    assert out["predicted_runtimes"] == ["nvidia"]
    text = " ".join(out["findings"])
    assert "replaces the whole" in text
    assert "default_runtime_name = 'runc'" in text and "fail on the next start" in text
    assert "Observed but not predicted: runc" in text
    assert out["report"] == EXPECTED_REPORT


def test_writes_five_lines_then_is_idempotent(lab, module_runner):
    dest = lab / "merge.txt"
    first = module_runner(containerd_merge.main, args(lab, observed_runtimes=["runc"], dest=str(dest)))
    assert first["changed"] is True
    assert dest.read_text() == EXPECTED_REPORT
    second = module_runner(containerd_merge.main, args(lab, observed_runtimes=["runc"], dest=str(dest)))
    assert second["changed"] is False


def test_check_mode_and_diff_write_nothing(lab, module_runner):
    dest = lab / "merge.txt"
    out = module_runner(containerd_merge.main, args(lab, observed_runtimes=["runc"], dest=str(dest)),
                        check_mode=True, diff=True)
    assert out["changed"] is True
    assert out["diff"]["after"] == EXPECTED_REPORT
    assert not dest.exists()


def test_backup_keeps_the_old_report(lab, module_runner):
    dest = lab / "merge.txt"
    dest.write_text("LOADED_RUNTIMES=something else\n")
    out = module_runner(containerd_merge.main,
                        args(lab, observed_runtimes=["runc"], dest=str(dest), backup=True))
    assert out["changed"] and os.path.exists(out["backup_file"])
    assert pathlib.Path(out["backup_file"]).read_text() == "LOADED_RUNTIMES=something else\n"


def test_dest_requires_an_observation(lab, module_runner):
    out = module_runner(containerd_merge.main, args(lab, dest=str(lab / "m.txt")))
    assert out["failed"] and "observed_runtimes" in out["msg"]


def test_syntax_error_names_file_line_column_and_writes_nothing(lab, module_runner):
    (lab / "conf.d/99-nvidia.toml").write_text('[plugins."x"\nruntime_type = 1\n')
    dest = lab / "merge.txt"
    out = module_runner(containerd_merge.main, args(lab, observed_runtimes=["runc"], dest=str(dest)))
    assert out["failed"]
    assert out["error"]["path"].endswith("99-nvidia.toml")
    assert out["error"]["line"] == 1 and out["error"]["column"]
    assert "99-nvidia.toml:1:" in out["msg"]
    assert not dest.exists()


def test_unquoted_dotted_table_is_named_with_its_fix(lab, module_runner):
    (lab / "config.toml").write_text(
        'version = 2\n\n[plugins.io.containerd.grpc.v1.cri.containerd.runtimes.runc]\n'
        '  runtime_type = "io.containerd.runc.v2"\n')
    out = module_runner(containerd_merge.main, args(lab))
    assert out["failed"]
    assert out["error"]["mistake"] == "unquoted-dotted-table"
    assert out["error"]["line"] == 3
    assert "common mistake 1" in out["msg"]
    assert out["error"]["fix"].endswith(
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]')


def test_missing_import_fails_like_containerd(lab, module_runner):
    (lab / "config.toml").write_text('version = 2\nimports = ["%s/nope.toml"]\n' % lab)
    out = module_runner(containerd_merge.main, args(lab))
    assert out["failed"] and "imported by" in out["msg"] and "nope.toml" in out["msg"]


def test_glob_matching_nothing_is_a_finding(lab, module_runner):
    os.rename(lab / "conf.d", lab / "config.d")
    out = module_runner(containerd_merge.main, args(lab))
    assert out["dropin_files"] == [] and out["predicted_runtimes"] == ["runc"]
    assert any("matched no file" in f and "config.d" in f for f in out["findings"])


def test_containerd_2_deep_merges_and_keeps_runc(lab, module_runner):
    out = module_runner(containerd_merge.main, args(lab, containerd_version="2.1"))
    assert out["predicted_runtimes"] == ["nvidia", "runc"]
    assert out["cri_plugin"] == "io.containerd.cri.v1.runtime"
    assert not any("fail on the next start" in f for f in out["findings"])


def test_observation_missing_a_predicted_runtime_says_not_restarted(lab, module_runner):
    out = module_runner(containerd_merge.main,
                        args(lab, containerd_version="2.0", observed_runtimes=["runc"]))
    assert any("not been restarted" in f for f in out["findings"])


def test_relative_glob_depends_on_patch_release(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "config.toml").write_text('version = 2\nimports = ["conf.d/*.toml"]\n')
    (tmp_path / "conf.d/99-nvidia.toml").write_text(DROPIN)
    old = cm.judge(str(tmp_path / "config.toml"), "1.6.20", working_dir="/")
    new = cm.judge(str(tmp_path / "config.toml"), "1.6.29", working_dir="/")
    assert old["dropin_files"] == [] and any("relative glob" in f for f in old["findings"])
    assert new["predicted_runtimes"] == ["nvidia"]


def test_version_3_is_fatal_from_1_6_32(lab):
    (lab / "config.toml").write_text('version = 3\n')
    assert cm.judge(str(lab / "config.toml"), "1.6.20")["predicted_runtimes"] == ["runc"]
    with pytest.raises(cc.ConfigError, match="unsupported config version 3"):
        cm.judge(str(lab / "config.toml"), "1.6.32")


def test_bad_version_text():
    with pytest.raises(cc.ConfigError, match="not a version"):
        cc.parse_version("latest")


def test_observation_from_a_real_dump_text(lab, module_runner):
    dump = ('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
            '  runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n')
    out = module_runner(containerd_merge.main, args(lab, observed_dump=dump))
    assert out["observed_runtimes"] == ["runc"]
    assert out["report"] == EXPECTED_REPORT


def test_containerd_2_starts_with_mistake_1_and_ignores_it(lab, module_runner):
    """1.x refuses the unquoted table; 2.x (2.2.0's dump) starts and loads only runc."""
    (lab / "config.toml").write_text(
        'version = 2\n\n[plugins.io.containerd.grpc.v1.cri.containerd.runtimes.kata]\n'
        '  runtime_type = "io.containerd.kata.v2"\n')
    out = module_runner(containerd_merge.main, args(lab, containerd_version="2.2"))
    assert not out.get("failed") and out["predicted_runtimes"] == ["runc"]
    mistake = [f for f in out["findings"] if "common mistake 1" in f]
    assert mistake and "silently ignores" in mistake[0] and ":3:" in mistake[0]
    assert module_runner(containerd_merge.main, args(lab, containerd_version="1.7"))["failed"]


@pytest.mark.parametrize("version, runtimes, labelled", [
    ("2.2", ["runc"], True),            # 2.0-2.2: an unversioned main file is labelled 3
    ("2.3", ["nvidia", "runc"], False),  # 2.3+: every file is migrated as it is loaded
])
def test_unversioned_files_on_containerd_2(lab, module_runner, version, runtimes, labelled):
    (lab / "config.toml").write_text(MAIN.format(dir=lab).replace("version = 2\n", ""))
    out = module_runner(containerd_merge.main, args(lab, containerd_version=version))
    assert out["predicted_runtimes"] == runtimes
    assert any("labelled 3" in f for f in out["findings"]) is labelled


def test_observe_runs_the_hosts_own_containerd_config_dump(lab, module_runner, containerd_oracle, monkeypatch):
    """observe: the real containerd 1.6.20 on PATH, asked for its dump of the incident pair (no
    daemon): it loads only the drop-in's nvidia, as the model predicts, and says so in the
    report's LOADED_RUNTIMES."""
    monkeypatch.setenv("PATH", os.path.dirname(containerd_oracle) + os.pathsep + os.environ["PATH"])
    out = module_runner(containerd_merge.main, args(lab, observe=True), check_mode=True)
    assert not out["failed"], out
    assert out["observed_runtimes"] == out["predicted_runtimes"] == ["nvidia"]
    assert out["report"] == EXPECTED_REPORT.replace("LOADED_RUNTIMES=runc", "LOADED_RUNTIMES=nvidia")
    under = module_runner(containerd_merge.main, args(lab, observe=True, root=str(lab)))
    assert under["failed"] and "not under root=" in under["msg"]


def test_observe_without_containerd_or_with_one_that_fails_says_so(lab, module_runner, monkeypatch, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setattr("ansible.module_utils.node.commands.SBIN", ())
    monkeypatch.setenv("PATH", str(empty))
    dest = lab / "merge.txt"
    out = module_runner(containerd_merge.main, args(lab, observe=True, dest=str(dest)))
    assert out["failed"] and "no containerd on this host's PATH" in out["msg"] and not dest.exists()
    broken = empty / "containerd"
    broken.write_text("#!/bin/sh\necho 'containerd: failed to load TOML: (10, 1): parsing error' >&2\nexit 1\n")
    broken.chmod(0o755)
    out = module_runner(containerd_merge.main, args(lab, observe=True, dest=str(dest)))
    assert out["failed"] and "exit 1" in out["msg"] and "parsing error" in out["msg"] and not dest.exists()
    assert "--config %s config dump" % (lab / "config.toml") in out["msg"]
    both = module_runner(containerd_merge.main, args(lab, observe=True, observed_runtimes=["runc"]))
    assert both["failed"] and "without observed_runtimes and observed_dump" in both["msg"]


def test_expected_runtimes_fail_naming_what_the_parser_read(lab, module_runner):
    ok = module_runner(containerd_merge.main, args(lab, expect_main_runtimes=["runc"],
                                                   expect_dropin_runtimes=["nvidia"]))
    assert not ok["failed"], ok
    (lab / "config.toml").write_text(MAIN.format(dir=lab / "elsewhere"))   # imports reach nothing
    out = module_runner(containerd_merge.main, args(lab, expect_main_runtimes=["runc"],
                                                    expect_dropin_runtimes=["nvidia"]))
    assert out["failed"] and out["dropin_runtimes"] == []
    assert "the drop-ins [] (files loaded: none), where nvidia were expected" in out["msg"], out["msg"]
    assert "imports" in out["msg"]


def test_a_broken_default_fails_after_writing_the_report(lab, module_runner):
    """fail_on_broken_default: the incident pair under 1.6 loses runc, so the default
    runtime is gone - the module fails with its findings; merge.txt is the observation and is
    written first."""
    dest = lab / "merge.txt"
    out = module_runner(containerd_merge.main, args(lab, observed_runtimes=["runc"], dest=str(dest),
                                                    fail_on_broken_default=True))
    assert out["failed"] and "default_runtime_name = 'runc'" in out["msg"]
    assert dest.read_text() == EXPECTED_REPORT
    fine = module_runner(containerd_merge.main, args(lab, containerd_version="2.2", fail_on_broken_default=True))
    assert not fine["failed"] and "runc" in fine["predicted_runtimes"]
