"""Issue 49, the part built so far: NVIDIA's toolkit installers, built here from their pinned
modules (toolchain/build.sh, group toolkit), run unmodified on a copy of a node's /etc/containerd
laid out as the GPU Operator's toolkit container sees it (roles/gpu_toolkit/files/toolkit_copy.py),
and what they leave judged by containerd 1.6.20's and 2.2.0's own `config dump`.

The expectations are NVIDIA's code's, read in the modules and seen here: v1.20.2's
nvidia-ctk-installer writes the drop-in conf.d/99-nvidia.toml and copies the main config's runtimes
(runc) into it, so containerd 1.6 - whose drop-in replaces the CRI table whole - keeps runc; v1.17.8
and v1.16.2 rewrite config.toml itself (its comments dropped) and leave a drop-in alone, so the
seed's runc-less drop-in still breaks containerd 1.6's next start.
"""
import json
import os
import pathlib
import re
import subprocess

import pytest

import versions
from gpu_stack_testing import TOOLCHAIN, bin_dir

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "roles/gpu_toolkit/files/toolkit_copy.py"
PLAYBOOK = ROOT / ".venv/bin/ansible-playbook"
# the lab's toolkit: its one pin, toolchain/nvidia-container-toolkit/go.mod
LAB = "v" + versions.go_mod_version("nvidia-container-toolkit", "github.com/NVIDIA/nvidia-container-toolkit")
INSTALLERS = {  # version -> the programs its image ran, as build.sh names them
    LAB: ["nvidia-ctk-installer"],
    "v1.17.8": ["nvidia-toolkit-v1.17.8"],
    "v1.16.2": ["nvidia-toolkit-v1.16.2", "nvidia-toolkit-toolkit-v1.16.2", "nvidia-toolkit-containerd-v1.16.2"],
}
ARTIFACTS = ["nvidia-ctk", "nvidia-cdi-hook", "nvidia-container-runtime", "nvidia-container-runtime.cdi",
             "nvidia-container-runtime.legacy", "nvidia-container-runtime-hook"]
# the seed's main config (lab-steps.md step 1) and its drop-in with nvidia alone (step 2), as a
# trainee's lab folder holds them: the import names the lab folder's own path
MAIN = """# containerd main config (the seed's)
version = 2
imports = ["{dir}/conf.d/*.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
"""
DROPIN = """# the seed's drop-in: declares nvidia
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the installer runs chrooted in a copy of its container: root")


def built(names):
    missing = [n for n in names if not os.access(str(bin_dir() / n), os.X_OK)]
    if missing:
        pytest.skip("not built: %s (toolchain/build.sh NAME %s; make test builds them first)" % (", ".join(missing), bin_dir()))


def seed_config(tmp_path, dropin=True):
    folder = tmp_path / "lab/etc/containerd"
    (folder / "conf.d").mkdir(parents=True)
    (folder / "config.toml").write_text(MAIN.format(dir=folder))
    if dropin:
        (folder / "conf.d/99-nvidia.toml").write_text(DROPIN)
    return folder


def run(version, config, work, *extra, oracles=()):
    args = ["python3", str(SCRIPT), version, str(bin_dir()), str(config), str(work), *extra]
    for name, path in oracles:
        args += ["--oracle", "%s=%s" % (name, path)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.mark.parametrize("version", sorted(INSTALLERS))
def test_installers_are_nvidias_module_at_the_pinned_version(version):
    built(INSTALLERS[version])
    for name in INSTALLERS[version]:
        out = subprocess.run(["go", "version", "-m", str(bin_dir() / name)], capture_output=True, text=True,
                             check=True).stdout
        assert re.search(r"^\s+(mod|dep)\s+github\.com/NVIDIA/nvidia-container-toolkit\s+%s\s" % re.escape(version),
                         out, re.M), out
        assert "CGO_ENABLED=1" in out
    status = subprocess.run([str(TOOLCHAIN / "build.sh"), "status", str(bin_dir()), "toolkit"], capture_output=True,
                            text=True, env=dict(os.environ, BUILD_STATUS_READ_ONLY="1")).stdout
    for name in INSTALLERS[version]:
        assert "%s %s ok" % (name, version) in status.splitlines()


def test_the_labs_installer_writes_a_drop_in_that_keeps_runc_and_says_it_skipped_the_restart(tmp_path, containerd_oracle,
                                                                                  containerd2_oracle):
    built(INSTALLERS[LAB] + ARTIFACTS)
    rc, report, _ = run(LAB, seed_config(tmp_path), tmp_path / "work",
                        oracles=[("1.6.20", containerd_oracle), ("2.2.0", containerd2_oracle)])
    assert rc == 0 and report["rc"] == 0, report["log"][-5:]
    assert report["restart"].endswith('msg="Skipping restart of containerd due to --restart-mode=none"')
    dropin = report["files"]["/etc/containerd/conf.d/99-nvidia.toml"]
    assert dropin["changed"] and "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]" in dropin["after"]
    assert 'default_runtime_name = "nvidia"' in dropin["after"]
    assert "# the seed's drop-in: declares nvidia" in dropin["comments_dropped"]
    for name in ("1.6.20", "2.2.0"):   # containerd's own view of the next start
        loaded = report["loaded"][name]
        assert loaded["serves_cri"] and loaded["default_runtime_name"] == "nvidia", loaded
        assert {"nvidia", "runc"} <= set(loaded["runtimes"]), loaded
    # the trainee's files were only read
    assert (tmp_path / "lab/etc/containerd/conf.d/99-nvidia.toml").read_text() == DROPIN


def test_the_labs_installer_on_a_node_without_a_drop_in_adds_one_and_the_import(tmp_path, containerd_oracle):
    built(INSTALLERS[LAB] + ARTIFACTS)
    config = tmp_path / "node/etc/containerd"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                                        '  default_runtime_name = "runc"\n')
    rc, report, _ = run(LAB, config, tmp_path / "work", oracles=[("1.6.20", containerd_oracle)])
    assert rc == 0 and report["rc"] == 0, report["log"][-5:]
    assert report["files"]["/etc/containerd/conf.d/99-nvidia.toml"]["before"] is None
    assert '"/etc/containerd/conf.d/*.toml"' in report["files"]["/etc/containerd/config.toml"]["after"]
    assert report["loaded"]["1.6.20"]["serves_cri"] and "nvidia" in report["loaded"]["1.6.20"]["runtimes"]


@pytest.mark.parametrize("version", ["v1.17.8", "v1.16.2"])
def test_the_seeds_versions_rewrite_config_toml_and_the_runc_less_drop_in_still_breaks_1_6(
        version, tmp_path, containerd_oracle, containerd2_oracle):
    built(INSTALLERS[version] + ARTIFACTS)
    rc, report, _ = run(version, seed_config(tmp_path), tmp_path / "work",
                        oracles=[("1.6.20", containerd_oracle), ("2.2.0", containerd2_oracle)])
    assert rc == 0 and report["rc"] == 0, report["log"][-5:]
    assert report["written"] == ["/etc/containerd/config.toml"]        # no drop-in in these versions
    main = report["files"]["/etc/containerd/config.toml"]
    assert 'default_runtime_name = "nvidia"' in main["after"] and "runtimes.nvidia]" in main["after"]
    assert "# containerd main config (the seed's)" in main["comments_dropped"]
    assert report["restart"].endswith('msg="Skipping restart of containerd due to --restart-mode=none"')
    # 1.6: the drop-in's CRI table replaces the main's whole - runc and the default's setting gone
    assert report["loaded"]["1.6.20"] == {"runtimes": ["nvidia"], "default_runtime_name": "runc", "serves_cri": False}
    # 2.x merges tables deeply: what the installer wrote survives
    assert report["loaded"]["2.2.0"]["serves_cri"] and {"nvidia", "runc"} <= set(report["loaded"]["2.2.0"]["runtimes"])


def test_a_rerun_changes_nothing_check_keeps_nothing_and_bad_input_is_refused(tmp_path, containerd_oracle):
    built(INSTALLERS[LAB] + ARTIFACTS)
    config = seed_config(tmp_path)
    rc, first, _ = run(LAB, config, tmp_path / "work", oracles=[("1.6.20", containerd_oracle)])
    assert rc == 0 and first["changed"] and (tmp_path / "work/report.json").is_file()
    kept = (tmp_path / "work/report.json").read_text()
    rc, again, _ = run(LAB, config, tmp_path / "work", oracles=[("1.6.20", containerd_oracle)])
    assert rc == 0 and not again["changed"] and (tmp_path / "work/report.json").read_text() == kept
    rc, checked, _ = run(LAB, config, tmp_path / "checked", "--check", oracles=[("1.6.20", containerd_oracle)])
    assert rc == 0 and checked["changed"] and not (tmp_path / "checked").exists()
    for version, folder, words in [("v1.18.0", config, "is not one built here: %s, v1.17.8, v1.16.2" % LAB),
                                   (LAB, tmp_path / "nowhere", "has no config.toml")]:
        rc, refused, err = run(version, folder, tmp_path / "refused")
        assert rc == 1 and refused["failed"] and words in refused["msg"] and not err
        assert not (tmp_path / "refused").exists()


def test_the_playbook_runs_as_the_readme_shows_reruns_unchanged_and_forgets(tmp_path):
    built(INSTALLERS["v1.16.2"] + ARTIFACTS)
    config = seed_config(tmp_path)
    common = ["-e", "toolkit_target=copy", "-e", "toolkit_version=v1.16.2", "-e", "toolkit_config_dir=%s" % config,
              "-e", "lab_state_dir=%s" % (tmp_path / "state")]

    def play(*args):
        done = subprocess.run([str(PLAYBOOK), "playbooks/toolkit.yml", *common, *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=600, env=dict(os.environ, ANSIBLE_FORCE_COLOR="0"))
        recap = re.search(r"localhost\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=(\d+)", done.stdout)
        assert recap, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout, int(recap.group(1)), int(recap.group(2))

    out, changed, failed = play("--check")      # says it would write the report, writes nothing
    assert (changed, failed) == (1, 0) and not (tmp_path / "state/toolkit").exists()
    out, changed, failed = play()
    assert (changed, failed) == (1, 0), out[-3000:]
    flat = " ".join(out.split())
    assert "rewrote /etc/containerd/config.toml (its comments dropped: 1)" in flat
    assert "containerd 1.6.20 config dump: runtimes nvidia, default runc - NO CRI" in flat
    assert (tmp_path / "state/toolkit/v1.16.2/report.json").is_file()
    assert play()[1:] == (0, 0)
    out, changed, failed = play("-e", "toolkit_restart_mode=signal")
    assert failed == 1 and "a copy has none" in " ".join(out.split())
    assert play("-e", "state=absent")[1:] == (1, 0) and not (tmp_path / "state/toolkit/v1.16.2").exists()


def test_the_save_keeps_what_containerd_ran_beside_the_files_and_refuses_a_status_it_cannot_read(tmp_path):
    """--save SRC SAVE NODE_STATUS (role gpu_toolkit, target node): the folder byte for byte and,
    beside it, what containerd ran and how it had started - state=absent gives that back when
    NVIDIA's cleanup did not restart containerd. A second save keeps the first; a status that is not
    real-node.sh's is refused in one message and nothing is written; --restore puts a drop-in back."""
    config = seed_config(tmp_path)
    save = tmp_path / "state/toolkit/saved-etc-containerd"

    def call(*args):
        done = subprocess.run(["python3", str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=60)
        return done.returncode, json.loads(done.stdout), done.stderr
    for status, words in [("not json", "the node's status is not JSON"),
                          (json.dumps({"containerd": False}), "names no runtimes_running: is containerd answering")]:
        rc, out, err = call("--save", config, save, status)
        assert (rc, out["failed"], err) == (1, True, "") and words in out["msg"]
        assert not save.parent.exists() or not any(save.parent.iterdir())
    status = {"containerd": True, "runtimes_running": ["runc"], "default_runtime": "runc", "boot": {"mode": "incident"}}
    rc, out, _ = call("--save", config, save, json.dumps(status))
    assert rc == 0 and out["changed"]
    assert json.loads(pathlib.Path(str(save) + ".node.json").read_text()) == {
        "boot_mode": "incident", "default_runtime": "runc", "runtimes_running": ["runc"]}
    assert (save / "conf.d/99-nvidia.toml").read_text() == DROPIN
    status["runtimes_running"] = ["nvidia", "runc"]
    rc, out, _ = call("--save", config, save, json.dumps(status))     # the first save stays
    assert rc == 0 and not out["changed"] and '"runc"]' in pathlib.Path(str(save) + ".node.json").read_text()
    (config / "conf.d/99-nvidia.toml").unlink()                      # NVIDIA's cleanup removed "its" drop-in
    rc, out, _ = call("--restore", save, config)
    assert rc == 0 and out["files"] == ["put back conf.d/99-nvidia.toml"] and (config / "conf.d/99-nvidia.toml").read_text() == DROPIN
