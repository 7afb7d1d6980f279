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


# ---- cdi (issue 48): RuntimeIgnoresCDI - CDI specs or a DRA GPU plugin on a node whose containerd applies no CDI
NODE_ROOT = ROOT / "tests/diagnosis_corpus/dra-lab-node-2/node-root"
# what crictl v1.37.0 prints against each containerd (the check's template `enableCDI|cdiSpecDirs`, and
# `crictl version`'s RuntimeVersion) - the real daemons say the same: test_cdi_against_real_daemons
CDI_SAYS = {"1.6.20": ("<no value>|<no value>", "1.6.20~ds1"),
            "2.2.0": ("true|[/etc/cdi /var/run/cdi]", "2.2.0+unknown"),
            "2.2.0-off": ("false|[/etc/cdi /var/run/cdi]", "2.2.0+unknown"),
            "2.4.2": ("<no value>|[/etc/cdi /var/run/cdi]", "2.4.2+unknown")}


def cdi_crictl(folder, daemon):
    """A crictl that answers as crictl does against containerd `daemon` (CDI_SAYS)."""
    line, version = CDI_SAYS[daemon]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "crictl"
    path.write_text("#!/bin/sh\ncase \"$*\" in\n"
                    "  *\"info -o go-template --template\"*) printf '%%s\\n' '%s' ;;\n"
                    "  *\" version\") printf 'Version:  0.1.0\\nRuntimeName:  containerd\\nRuntimeVersion:  %s\\n"
                    "RuntimeApiVersion:  v1\\n' ;;\n"
                    "  *) echo \"unexpected: $*\" >&2; exit 3 ;;\nesac\n" % (line, version))
    path.chmod(0o755)
    return path


def node(tmp_path, specs=(), plugin=False, dirs=("etc/cdi", "var/run/cdi")):
    """A node's spec folders (`specs`: lab-node-2's, copied from the corpus - var/run/cdi/<the claim's>,
    etc/cdi/nvidia.json) and plugins registry (`plugin`: NVIDIA's DRA kubelet plugin registered)."""
    for d in dirs:
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    for rel in specs:
        shutil.copy(NODE_ROOT / rel, tmp_path / rel)
    (tmp_path / "registry").mkdir(exist_ok=True)
    if plugin:
        (tmp_path / "registry/gpu.nvidia.com-reg.sock").write_text("")
    return ["--cdi-spec-dir", str(tmp_path / "etc/cdi"), "--cdi-spec-dir", str(tmp_path / "var/run/cdi"),
            "--plugins-registry", str(tmp_path / "registry")]


def run_cdi(args, crictl, endpoint="unix:///nonexistent.sock"):
    done = subprocess.run([str(CHECK), "cdi", "--crictl", str(crictl), "--endpoint", endpoint] + args,
                          capture_output=True, text=True, timeout=60, env=dict(os.environ, PATH="/usr/bin:/bin"))
    return done.returncode, done.stdout


SPEC_FILE = "k8s.gpu.nvidia.com-claim_05b595ad-06e3-4f09-8f7d-60128621dde8.yaml"
CLAIM = "var/run/cdi/" + SPEC_FILE
GPU_SPEC = "etc/cdi/nvidia.json"       # kind nvidia.com/gpu: NVIDIA's runtime (mode cdi) applies it itself


def test_cdi_on_1_6_with_a_claims_spec_is_a_problem_naming_version_and_folder(tmp_path):
    args = node(tmp_path / "n", specs=[CLAIM], plugin=True)
    rc, out = run_cdi(args, cdi_crictl(tmp_path / "c", "1.6.20"))
    assert rc == 1 and out.count("\n") == 1, out
    assert out.startswith("containerd 1.6.20~ds1 knows no CDI (crictl info: no enableCDI, no cdiSpecDirs; CDI came "
                          "with containerd 1.7) but %s holds 1 CDI spec of gpu.nvidia.com (%s); the DRA kubelet plugin "
                          "gpu.nvidia.com is "
                          "registered (%s): it drops the CDI devices the kubelet hands it" % (
                              tmp_path / "n/var/run/cdi", SPEC_FILE, tmp_path / "n/registry/gpu.nvidia.com-reg.sock")), out
    assert out.rstrip().endswith("Run containerd 1.7+ with enable_cdi = true (2.x: on by default)")
    assert len(out) <= 512 + 200          # NPD keeps max_output_length (512) of it; what matters comes first


def test_cdi_a_registered_dra_plugin_alone_is_enough_and_nothing_at_all_is_ok(tmp_path):
    rc, out = run_cdi(node(tmp_path / "a", plugin=True), cdi_crictl(tmp_path / "c", "1.6.20"))
    assert rc == 1 and "but the DRA kubelet plugin gpu.nvidia.com is registered" in out, out
    rc, out = run_cdi(node(tmp_path / "b"), tmp_path / "no-crictl")     # nothing to apply: no daemon asked
    assert rc == 0 and out.startswith("no CDI spec of gpu.nvidia.com in %s, %s and no DRA kubelet plugin gpu.nvidia.com "
                                      "registered" % (tmp_path / "b/etc/cdi", tmp_path / "b/var/run/cdi")), out


def test_cdi_lab_node_1s_kind_of_spec_alone_is_not_a_claim_on_1_6(tmp_path):
    """lab-node-1: containerd 1.6.20 and NVIDIA's runtime in mode cdi, which reads /etc/cdi/nvidia.json
    (kind nvidia.com/gpu) itself - its GPU Pods work without containerd's CDI: counted, not a problem."""
    rc, out = run_cdi(node(tmp_path / "n", specs=[GPU_SPEC]), tmp_path / "no-crictl")
    assert rc == 0 and out.rstrip().endswith("(1 other CDI spec(s): NVIDIA's runtime applies those itself)"), out
    rc, out = run_cdi(node(tmp_path / "m", specs=[GPU_SPEC, CLAIM]), cdi_crictl(tmp_path / "c", "1.6.20"))
    assert rc == 1 and "holds 1 CDI spec of gpu.nvidia.com (%s)" % SPEC_FILE in out and "nvidia.json" not in out, out


def test_cdi_off_on_2_2_is_a_problem_on_and_2_4s_always_on_are_not(tmp_path):
    # the daemon's own folders, where the node's specs are
    folders = ["--cdi-spec-dir", "/etc/cdi", "--cdi-spec-dir", "/var/run/cdi"]
    registry = node(tmp_path / "n", plugin=True)[-2:]
    rc, out = run_cdi(folders + registry, cdi_crictl(tmp_path / "off", "2.2.0-off"))
    assert rc == 1 and out.startswith("containerd 2.2.0+unknown has CDI off (crictl info: enableCDI false) but "), out
    assert "Set enable_cdi = true in its CRI plugin config and restart containerd" in out
    rc, out = run_cdi(folders + registry, cdi_crictl(tmp_path / "on", "2.2.0"))
    assert rc == 0 and out.startswith("containerd 2.2.0+unknown applies CDI (enableCDI true; spec folders /etc/cdi "
                                      "/var/run/cdi): "), out
    rc, out = run_cdi(folders + registry, cdi_crictl(tmp_path / "24", "2.4.2"))
    assert rc == 0 and out.startswith("containerd 2.4.2+unknown applies CDI (always on: cdiSpecDirs without enableCDI"), out


def test_cdi_on_but_not_from_the_folder_that_holds_the_specs(tmp_path):
    args = node(tmp_path / "n", specs=[CLAIM])
    rc, out = run_cdi(args, cdi_crictl(tmp_path / "c", "2.2.0"))
    assert rc == 1 and "applies CDI (enableCDI true) from /etc/cdi /var/run/cdi only, but %s holds 1 CDI spec" % (
        tmp_path / "n/var/run/cdi") in out, out
    assert "Add %s to the CRI plugin's cdi_spec_dirs" % (tmp_path / "n/var/run/cdi") in out


def test_cdi_unreachable_containerd_is_unknown(tmp_path):
    args = node(tmp_path / "n", specs=[CLAIM])
    crictl = fake_crictl(tmp_path / "d", fail="connect: connect: no such file or directory")
    rc, out = run_cdi(args, crictl)
    assert rc == 2 and out.startswith("unknown: containerd unreachable at unix:///nonexistent.sock"), out
    rc, out = run_cdi(args, tmp_path / "no-crictl")
    assert rc == 2 and "crictl binary" in out, out
    done = subprocess.run([str(CHECK), "cdi", "--cdi-spec-dir"], capture_output=True, text=True)
    assert done.returncode == 2 and "--cdi-spec-dir needs a folder" in done.stdout


def test_cdi_against_real_daemons(containerd_oracle, containerd2_oracle, containerd24_oracle, crictl, tmp_path):
    """CDI_SAYS is what the real daemons make crictl print: each version started here (its state in a
    folder of its own), asked by the real crictl, judged with the claim's spec in a folder it reads."""
    if os.geteuid() != 0:
        pytest.skip("a containerd daemon needs root")
    import tempfile
    from lab_testing import wait_for
    made_run = not os.path.exists("/run/containerd")   # containerd 2.x makes it (empty) at start
    for key, binary, extra in (("1.6.20", containerd_oracle, ""), ("2.2.0", containerd2_oracle, ""),
                               ("2.2.0-off", containerd2_oracle, "enable_cdi = false\n"),
                               ("2.4.2", containerd24_oracle, "")):
        d = pathlib.Path(tempfile.mkdtemp(prefix="cdi-", dir="/tmp"))
        node(d, specs=[CLAIM])
        if key == "1.6.20":
            config = ('version = 2\nroot = "%s/root"\nstate = "%s/state"\n[grpc]\n  address = "%s/c.sock"\n'
                      '[plugins."io.containerd.internal.v1.opt"]\n  path = "%s/opt"\n' % (d, d, d, d))
        else:
            config = ('version = 3\nroot = "%s/root"\nstate = "%s/state"\n[grpc]\n  address = "%s/c.sock"\n'
                      '[plugins."io.containerd.nri.v1.nri"]\n  disable = true\n[plugins."io.containerd.internal.v1.opt"]\n'
                      '  path = "%s/opt"\n[plugins."io.containerd.cri.v1.runtime"]\n  cdi_spec_dirs = ["%s"]\n%s' % (
                          d, d, d, d, d / "var/run/cdi", "  " + extra if extra else ""))
        (d / "config.toml").write_text(config)
        log = open(d / "log", "wb")
        proc = subprocess.Popen([binary, "--config", str(d / "config.toml")], stdout=log, stderr=subprocess.STDOUT)
        endpoint = "unix://%s/c.sock" % d
        try:
            wait_for("containerd %s to serve CRI" % key, lambda: proc.poll() is None and subprocess.run(
                [crictl, "--runtime-endpoint", endpoint, "info"], capture_output=True).returncode == 0, 30, interval=0.2)
            done = subprocess.run([crictl, "--runtime-endpoint", endpoint, "info", "-o", "go-template", "--template",
                                   '{{with .config}}{{index . "enableCDI"}}|{{index . "cdiSpecDirs"}}{{end}}'],
                                  capture_output=True, text=True)
            line = CDI_SAYS[key][0].replace("/etc/cdi /var/run/cdi", str(d / "var/run/cdi"))
            assert done.stdout.strip() == line, (key, done.stdout, done.stderr)
            version = subprocess.run([crictl, "--runtime-endpoint", endpoint, "version"], capture_output=True, text=True)
            assert "RuntimeVersion:  %s" % CDI_SAYS[key][1] in version.stdout, version.stdout
            rc, out = run_cdi(["--cdi-spec-dir", str(d / "var/run/cdi"), "--plugins-registry", str(d / "registry")],
                              crictl, endpoint)
            assert rc == (1 if key in ("1.6.20", "2.2.0-off") else 0), (key, out)
            assert "containerd %s " % CDI_SAYS[key][1] in out and str(d / "var/run/cdi") in out, out
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            log.close()
            shutil.rmtree(d, ignore_errors=True)
    if made_run and os.path.isdir("/run/containerd") and not os.listdir("/run/containerd"):
        os.rmdir("/run/containerd")
