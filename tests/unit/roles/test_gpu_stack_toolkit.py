"""NVIDIA's container toolkit v1.20.2 (built by toolchain/build.sh), unmodified, on this project's
files: nvidia-ctk's containerd drop-in for step 1's main config, judged by the real containerd
(1.6.20 and 2.2.0 `config dump`) and by the project's containerd_merge; and
nvidia-container-runtime in CDI mode rewriting a bundle for one of the mock's GPUs.
"""
import json
import os
import re
import subprocess

import jinja2
import pytest
import yaml

from ansible.module_utils.containerd import merge as cm
import containerd_merge
from gpu_stack_testing import ROOT, gpu_cdi_spec, listed, nvidia_binary

TEMPLATES = ROOT / "roles/containerd_config/templates"
CRI = 'plugins."io.containerd.grpc.v1.cri"'


def render(template, **variables):
    """A containerd_config template as the role renders it (Ansible's trim_blocks, to_json, match)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), trim_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters["to_json"] = json.dumps
    env.tests["match"] = lambda value, pattern: re.match(pattern, value) is not None
    return env.get_template(template).render(ansible_managed="Ansible managed", **variables)


def step1(folder):
    """Step 1's main config (the role's defaults: version 2, imports conf.d/*.toml, runc with
    SystemdCgroup) with the imports glob pointing into folder, as the lab's root does."""
    defaults = yaml.safe_load((ROOT / "roles/containerd_config/defaults/main.yml").read_text())
    (folder / "conf.d").mkdir()
    main = folder / "config.toml"
    main.write_text(render("config.toml.j2", **dict(defaults, containerd_config_imports=[str(folder / "conf.d/*.toml")])))
    return main


def seed_dropin(folder):
    """The seed's hand-written 99-nvidia.toml: inventory's lab_nvidia_dropin, rendered by the role."""
    lab = yaml.safe_load((ROOT / "inventory/group_vars/all/lab.yml").read_text())
    path = folder / "conf.d" / lab["lab_nvidia_dropin"]["name"]
    path.write_text(render("dropin.toml.j2", _containerd_config_dropin=lab["lab_nvidia_dropin"]))
    return path


def configure(main):
    """nvidia-ctk runtime configure --runtime=containerd on main, its drop-in at the default name."""
    done = subprocess.run([str(nvidia_binary("nvidia-ctk")), "runtime", "configure", "--runtime=containerd",
                           "--config=%s" % main, "--drop-in-config=%s" % (main.parent / "conf.d/99-nvidia.toml")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stdout
    return done.stdout


def dump(binary, main):
    done = subprocess.run([binary, "--config", str(main), "config", "dump"], cwd=str(main.parent),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def merge(module_runner, main, version):
    out = module_runner(containerd_merge.main, {"path": str(main), "containerd_version": version})
    assert not out["failed"], out
    return out


def test_nvidia_ctk_writes_a_dropin_that_survives_containerd_1_6(tmp_path, module_runner, containerd_oracle,
                                                                    containerd2_oracle):
    main = step1(tmp_path)
    said = configure(main)
    # it writes and never restarts (v1.20.2 pkg/config/engine/containerd, cmd/nvidia-ctk/runtime/configure)
    assert "Wrote updated config to %s" % (tmp_path / "conf.d/99-nvidia.toml") in said
    assert "It is recommended that containerd daemon be restarted." in said
    dropin = (tmp_path / "conf.d/99-nvidia.toml").read_text()
    # the whole CRI section is copied (containerd < 2.1 replaces a plugin's section per file)
    assert "[%s.containerd.runtimes.runc]" % CRI in dropin and "[%s.containerd.runtimes.nvidia]" % CRI in dropin
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime"' in dropin
    assert 'default_runtime_name = "runc"' in dropin
    # the main file is re-emitted without its comments; its one conf.d glob stays one
    rewritten = main.read_text()
    assert "# containerd main config" not in rewritten
    assert re.findall(r"^imports = (.*)$", rewritten, re.M) == [json.dumps([str(tmp_path / "conf.d/*.toml")])]
    assert cm.runtimes_in_dump(dump(containerd_oracle, main)) == ["nvidia", "runc"]
    assert cm.runtimes_in_dump(dump(containerd2_oracle, main)) == ["nvidia", "runc"]
    for version in ("1.6.20", "2.2.0"):
        judged = merge(module_runner, main, version)
        assert judged["predicted_runtimes"] == ["nvidia", "runc"], (version, judged["findings"])
        assert judged["dropin_files"] == [str(tmp_path / "conf.d/99-nvidia.toml")]


def test_the_seeds_dropin_loses_runc_on_containerd_1_6(tmp_path, module_runner, containerd_oracle,
                                                       containerd2_oracle):
    """The contrast the guide draws: the hand-written drop-in holds only runtimes.nvidia; 1.6.20
    replaces the CRI section with it (runc gone, default_runtime_name runc dangling), 2.2.0 merges."""
    main = step1(tmp_path)
    seed_dropin(tmp_path)
    assert cm.runtimes_in_dump(dump(containerd_oracle, main)) == ["nvidia"]
    assert merge(module_runner, main, "1.6.20")["predicted_runtimes"] == ["nvidia"]
    assert cm.runtimes_in_dump(dump(containerd2_oracle, main)) == ["nvidia", "runc"]
    assert merge(module_runner, main, "2.2.0")["predicted_runtimes"] == ["nvidia", "runc"]


def test_nvidia_ctk_over_the_seeds_dropin_replaces_it(tmp_path, module_runner, containerd_oracle):
    """nvidia-ctk's default drop-in has the seed's file name: run on the incident node, it rewrites
    that file with the whole CRI section, and 1.6.20 then loads both runtimes."""
    main = step1(tmp_path)
    seed = seed_dropin(tmp_path)
    before = seed.read_text()
    configure(main)
    assert seed.read_text() != before and "[%s.containerd.runtimes.runc]" % CRI in seed.read_text()
    assert cm.runtimes_in_dump(dump(containerd_oracle, main)) == ["nvidia", "runc"]
    assert merge(module_runner, main, "1.6.20")["predicted_runtimes"] == ["nvidia", "runc"]


RUNTIME_CONFIG = """[nvidia-container-runtime]
debug = "{log}"
log-level = "debug"
mode = "cdi"
runtimes = ["/bin/true"]

[nvidia-container-runtime.modes.cdi]
default-kind = "nvidia.com/gpu"
spec-dirs = ["{specs}"]
"""


@pytest.fixture
def runtime(tmp_path, driver_root):
    """nvidia-container-runtime with mode "cdi" (never auto: 1.18+ resolves auto to jit-cdi, which
    calls NVML), its config found through XDG_CONFIG_HOME, /bin/true as the low-level runtime, and
    the CDI spec gpu_cdi_spec.py writes for the mock's GPUs."""
    binary = nvidia_binary("nvidia-container-runtime")
    specs = tmp_path / "cdi"
    specs.mkdir()
    gpu_cdi_spec.main(["--driver-root", str(driver_root), "--output", str(specs / "nvidia.json")])
    (tmp_path / "xdg/nvidia-container-runtime").mkdir(parents=True)
    log = tmp_path / "runtime.log"
    (tmp_path / "xdg/nvidia-container-runtime/config.toml").write_text(RUNTIME_CONFIG.format(log=log, specs=specs))

    def create(visible):
        bundle = tmp_path / "bundle"
        (bundle / "rootfs").mkdir(parents=True, exist_ok=True)
        spec = {"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "mounts": [], "linux": {},
                "process": {"args": ["nvidia-smi", "-L"], "cwd": "/",
                            "env": ["PATH=/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES=%s" % visible]}}
        (bundle / "config.json").write_text(json.dumps(spec))
        done = subprocess.run([str(binary), "--bundle", str(bundle), "create", "ctr-%s" % visible[:12]],
                              env=dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "xdg")), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=60, check=False)
        return done, json.loads((bundle / "config.json").read_text()), log.read_text() if log.exists() else ""
    return create


def test_runtime_in_cdi_mode_gives_the_container_one_mock_gpu(runtime, driver_root):
    uuid = listed(driver_root)[1][2]
    done, spec, log = runtime(uuid)
    assert done.returncode == 0, done.stdout
    nodes = {(d["path"], d["type"], d["major"], d["minor"]) for d in spec["linux"]["devices"]}
    assert nodes == {("/dev/nvidia1", "c", 195, 1), ("/dev/nvidiactl", "c", 195, 255), ("/dev/nvidia-uvm", "c", 510, 0)}
    mounts = {m["destination"]: m["source"] for m in spec["mounts"]}
    assert mounts["/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"] == str(driver_root / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    assert mounts["/usr/bin/nvidia-smi"] == str(driver_root / "usr/bin/nvidia-smi")
    assert "NVML_MOCK_DEVICE_NODES=/dev" in spec["process"]["env"]
    assert "Using requested mode 'cdi'" in log
    assert "Creating CDI modifier for devices: [nvidia.com/gpu=%s]" % uuid in log
    assert "Forwarding command to runtime /bin/true" in log


def test_runtime_refuses_a_gpu_the_spec_does_not_name(runtime):
    done, spec, _ = runtime("GPU-00000000-0000-0000-0000-000000000000")
    assert done.returncode != 0
    assert "unresolvable CDI devices nvidia.com/gpu=GPU-00000000-0000-0000-0000-000000000000" in done.stdout
    assert "devices" not in spec["linux"]
