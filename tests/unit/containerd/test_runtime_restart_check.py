"""The sentinel's check (roles/runtime_sentinel/files/runtime-restart-check.sh, issue 39) against
the project's containerd model, over every config set of tests/containerd_corpus and the three
real containerd binaries (1.6.20, 2.2.0, 2.4.2): its `config dump` is what the check reads.

- breaks: exit 1 exactly when the model (`merge.judge`) says the next start serves no CRI - the
  files do not load (ConfigError) or default_runtime_name is not among the predicted runtimes;
  else exit 0. Never another code: the check needs no daemon for it.
- pending: with a daemon that loaded what the model predicts, exit 0; with a daemon that loaded
  runc alone (the incident), exit 1 exactly when the prediction is not runc alone as default.
The daemon is a stand-in crictl that prints what the check's go-template gives (the real crictl
against the real containerd: tests/cluster/test_real_node.py). Unreachable -> 2.
"""
import os
import pathlib
import shutil
import subprocess

import pytest
import yaml

from ansible.module_utils.containerd import loader as cc
from ansible.module_utils.containerd import merge as cm

ROOT = pathlib.Path(__file__).resolve().parents[3]
CHECK = ROOT / "roles/runtime_sentinel/files/runtime-restart-check.sh"
CORPUS = ROOT / "tests/containerd_corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
ORACLES = {"1.6.20": "containerd_oracle", "2.2.0": "containerd2_oracle", "2.4.2": "containerd24_oracle"}


def materialise(case, tmp_path):
    dest = tmp_path / case
    shutil.copytree(CORPUS / case, dest)
    for path in dest.rglob("*"):
        if path.is_file() and path.name != "case.yml":
            path.write_text(path.read_text().replace("@DIR@", str(dest)))
    meta = yaml.safe_load((dest / "case.yml").read_text()) or {} if (dest / "case.yml").exists() else {}
    return dest, meta


def fake_crictl(folder, line=None, fail=None):
    """A daemon that loaded `line` (default|runtime,runtime,|cdi - the check's template), or is
    unreachable (`fail`: what crictl prints then)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "crictl"
    if fail:
        body = "echo %s >&2; exit 1\n" % repr(fail).replace("'", "'\"'\"'").join("''")
    else:
        body = ('case "$*" in *"info -o go-template --template"*) ;; *) echo "unexpected: $*" >&2; exit 3 ;; esac\n'
                "printf '%%s\\n' '%s'\n" % line)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def run(mode, config, containerd, crictl=None, cwd=None):
    argv = [str(CHECK), mode, "--config", str(config), "--containerd", str(containerd)]
    if crictl:
        argv += ["--crictl", str(crictl), "--endpoint", "unix:///nonexistent.sock"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd,
                          env=dict(os.environ, PATH="/usr/bin:/bin"))
    return done.returncode, done.stdout


def model(main, version, cwd):
    try:
        result = cm.judge(str(main), version, working_dir=str(cwd))
    except cc.ConfigError as error:
        return None, str(error)
    return result, None


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("version", sorted(ORACLES))
def test_check_agrees_with_the_model(version, case, tmp_path, request):
    binary = request.getfixturevalue(ORACLES[version])
    folder, meta = materialise(case, tmp_path)
    cwd = folder / meta.get("cwd", ".")
    cwd.mkdir(parents=True, exist_ok=True)
    main = folder / "config.toml"
    result, error = model(main, version, cwd)
    model_breaks = result is None or result["default_runtime_name"] not in result["predicted_runtimes"]

    rc, out = run("breaks", main, binary, cwd=cwd)
    assert rc == (1 if model_breaks else 0), "model: %s; check: %s" % (error or result, out)
    assert out.count("\n") == 1, out  # one line: NPD's message
    if model_breaks and result is not None:
        # the message names the default runtime, the runtimes and the file that replaced the table
        assert result["default_runtime_name"] in out and "containerd.runtimes" in out, out

    cdi = {"1.6.20": "<no value>", "2.2.0": "true", "2.4.2": "<no value>"}[version]  # each version's (2.4: no switch)
    incident = fake_crictl(tmp_path / "incident", "runc|runc,|" + cdi)
    rc, out = run("pending", main, binary, incident, cwd=cwd)
    if result is None:
        assert rc == 1 and "next start: fails" in out, out
        return
    same = result["predicted_runtimes"] == ["runc"] and result["default_runtime_name"] == "runc"
    assert rc == (0 if same else 1), "model: %s; check: %s" % (result, out)
    assert out.startswith("loaded: runc; next start: "), out

    settled = fake_crictl(tmp_path / "settled", "%s|%s|%s" % (
        result["default_runtime_name"], "".join(n + "," for n in result["predicted_runtimes"]), cdi))
    rc, out = run("pending", main, binary, settled, cwd=cwd)
    assert rc == 0, out


def test_the_incident_names_runtimes_and_file(containerd_oracle, tmp_path):
    folder, _ = materialise("01-lab-incident", tmp_path)
    crictl = fake_crictl(tmp_path / "d", "runc|runc,|<no value>")
    rc, out = run("pending", folder / "config.toml", containerd_oracle, crictl)
    assert rc == 1
    assert out.startswith("loaded: runc; next start: nvidia (runtimes, default runtime runc -> runc")\
        or out.startswith("loaded: runc; next start: nvidia (runtimes differ"), out
    rc, out = run("breaks", folder / "config.toml", containerd_oracle)
    assert rc == 1
    assert out.strip() == ("next start of containerd 1.6.20 serves no CRI: default_runtime_name runc is not "
                           "among runtimes nvidia - the containerd.runtimes table is replaced whole by %s"
                           % (folder / "conf.d/99-nvidia.toml"))


def test_2x_keeps_runc_and_the_restart_stays_pending(containerd2_oracle, tmp_path):
    folder, _ = materialise("01-lab-incident", tmp_path)
    crictl = fake_crictl(tmp_path / "d", "runc|runc,|true")
    rc, out = run("pending", folder / "config.toml", containerd2_oracle, crictl)
    assert rc == 1 and out.startswith("loaded: runc; next start: nvidia, runc (runtimes differ"), out
    assert run("breaks", folder / "config.toml", containerd2_oracle)[0] == 0


def test_cdi_and_default_runtime_count(containerd2_oracle, tmp_path):
    folder, _ = materialise("02-main-only", tmp_path)
    crictl = fake_crictl(tmp_path / "d", "runc|runc,|false")
    rc, out = run("pending", folder / "config.toml", containerd2_oracle, crictl)
    assert rc == 1 and "CDI false -> true differ" in out, out
    crictl = fake_crictl(tmp_path / "e", "nvidia|nvidia,runc,|true")
    rc, out = run("pending", folder / "config.toml", containerd2_oracle, crictl)
    assert rc == 1 and "default runtime nvidia -> runc" in out, out


def test_unreachable_containerd_is_unknown(containerd_oracle, tmp_path):
    folder, _ = materialise("02-main-only", tmp_path)
    crictl = fake_crictl(tmp_path / "d", fail="connect: connect: no such file or directory")
    rc, out = run("pending", folder / "config.toml", containerd_oracle, crictl)
    assert rc == 2 and out.startswith("unknown: containerd unreachable at unix:///nonexistent.sock"), out
    assert "no such file or directory" in out
    rc, out = run("pending", folder / "config.toml", containerd_oracle, tmp_path / "no-crictl")
    assert rc == 2 and "crictl binary" in out, out


def test_no_config_is_containerd_s_defaults(containerd_oracle, containerd2_oracle, tmp_path):
    """A node whose main config does not exist yet (the lab before step 1) starts on containerd's
    defaults: runc, served - as real-node.sh starts it then."""
    for binary in (containerd_oracle, containerd2_oracle):
        rc, out = run("breaks", tmp_path / "nothing.toml", binary)
        assert rc == 0 and "absent: containerd's defaults" not in out and "default runtime runc" in out, out
    crictl = fake_crictl(tmp_path / "d", "runc|runc,|<no value>")
    rc, out = run("pending", tmp_path / "nothing.toml", containerd_oracle, crictl)
    assert rc == 0 and out.startswith("loaded: runc; next start: the same"), out


def test_missing_inputs_are_unknown(containerd_oracle, tmp_path):
    rc, out = run("breaks", tmp_path / "nothing.toml", tmp_path / "no-containerd")
    assert rc == 2 and "containerd binary" in out, out
    done = subprocess.run([str(CHECK), "sometimes"], capture_output=True, text=True)
    assert done.returncode == 2 and "pending or breaks" in done.stdout


def test_a_disabled_cri_plugin_breaks_the_next_start(containerd_oracle, containerd2_oracle, tmp_path):
    """Beyond the corpus (the model does not read disabled_plugins): a next start without the CRI
    plugin serves no CRI, whatever its runtimes."""
    for binary, plugin, version in ((containerd_oracle, "io.containerd.grpc.v1.cri", 2),
                                    (containerd2_oracle, "io.containerd.cri.v1.runtime", 3)):
        config = tmp_path / ("config-%d.toml" % version)
        config.write_text('version = %d\ndisabled_plugins = ["%s"]\n' % (version, plugin))
        rc, out = run("breaks", config, binary)
        assert rc == 1 and "the CRI plugin is in disabled_plugins of %s" % config in out, out
