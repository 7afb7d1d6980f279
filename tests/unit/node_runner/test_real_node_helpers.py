"""The real node's helpers that are logic, not process handling (node_runner):
node_view.py (the node's /etc/containerd from the lab folder) and node_state.py (its records);
how the role says real-node.sh's failures."""
import importlib.util
import json
import pathlib
import subprocess
import sys
from lab_testing import ROOT  # tests/lab_testing.py

import pytest

FILES = ROOT / "node_runner"


def load(name):
    spec = importlib.util.spec_from_file_location(name, FILES / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


node_view = load("node_view")
node_state = load("node_state")

MAIN = """version = 2
imports = ["{lab}/etc/containerd/conf.d/*.toml"]
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
"""
DROPIN = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
  BinaryName = "/usr/bin/nvidia-container-runtime"
  SystemdCgroup = true
"""


@pytest.fixture
def lab(tmp_path):
    root = tmp_path / "gpuop"
    (root / "etc/containerd/conf.d").mkdir(parents=True)
    (root / "etc/containerd/config.toml").write_text(MAIN.format(lab=root))
    (root / "etc/containerd/conf.d/99-nvidia.toml").write_text(DROPIN)
    return root


def test_main_copies_the_main_config_alone_then_all_brings_the_dropin(lab, tmp_path):
    dst = tmp_path / "view"
    assert node_view.sync(str(lab / "etc/containerd"), str(dst), "main", str(lab), False, False) == ["config.toml"]
    assert sorted(p.name for p in dst.rglob("*") if p.is_file()) == ["config.toml"]
    assert node_view.sync(str(lab / "etc/containerd"), str(dst), "all", str(lab), False, False) == ["conf.d/99-nvidia.toml"]
    assert node_view.sync(str(lab / "etc/containerd"), str(dst), "all", str(lab), False, False) == []   # nothing new
    # the lab folder's path names the node's own /etc/containerd; nothing else changed
    assert (dst / "config.toml").read_text() == MAIN.format(lab="")
    assert (dst / "conf.d/99-nvidia.toml").read_text() == DROPIN


def test_a_file_gone_from_the_lab_folder_goes_from_the_view(lab, tmp_path):
    dst = tmp_path / "view"
    node_view.sync(str(lab / "etc/containerd"), str(dst), "all", str(lab), False, False)
    (lab / "etc/containerd/conf.d/99-nvidia.toml").unlink()
    assert node_view.sync(str(lab / "etc/containerd"), str(dst), "all", str(lab), False, False) == []
    assert not (dst / "conf.d/99-nvidia.toml").exists()


def test_machine_adaptations(lab, tmp_path):
    dst = tmp_path / "view"
    node_view.sync(str(lab / "etc/containerd"), str(dst), "all", str(lab), True, True)
    main = (dst / "config.toml").read_text()
    assert "SystemdCgroup = false" in main and "SystemdCgroup = true" not in main
    assert '[plugins."io.containerd.grpc.v1.cri"]\n  restrict_oom_score_adj = true' in main
    assert "SystemdCgroup = false" in (dst / "conf.d/99-nvidia.toml").read_text()
    # an existing CRI table gets the setting under its own header, once
    text = '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "pause"\n'
    assert node_view.restrict_oom(text) == ('[plugins."io.containerd.grpc.v1.cri"]\n  restrict_oom_score_adj = true\n'
                                            '  sandbox_image = "pause"\n')
    assert node_view.restrict_oom(node_view.restrict_oom(text)) == node_view.restrict_oom(text)
    # version 3 (containerd 2.x) names its CRI runtime plugin differently
    v3 = 'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd]\n  default_runtime_name = "runc"\n'
    assert node_view.restrict_oom(v3).endswith('[plugins."io.containerd.cri.v1.runtime"]\n  restrict_oom_score_adj = true\n')
    # a file that does not configure CRI is left alone
    assert node_view.restrict_oom('[plugins."io.containerd.grpc.v1.opt"]\n  path = "/opt"\n').count("restrict") == 0


def test_the_cri_table_in_toml_literal_quotes_gets_the_setting_once():
    """containerd 2.x's own `config default` names its tables in literal quotes
    (plugins.'io.containerd.cri.v1.runtime'); the setting must go under that header, not into a
    second table of the same name - containerd 2.2.0 refused such a view: "toml: table
    io.containerd.cri.v1.runtime already exists" (lab-node-2's config, issue 48)."""
    import tomllib
    v3 = ("version = 3\n\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = true\n"
          "  cdi_spec_dirs = ['/etc/cdi', '/var/run/cdi']\n")
    out = node_view.restrict_oom(v3)
    assert out.count("io.containerd.cri.v1.runtime") == 1
    table = tomllib.loads(out)["plugins"]["io.containerd.cri.v1.runtime"]
    assert table == {"restrict_oom_score_adj": True, "enable_cdi": True, "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"]}
    # a main config that configures no CRI still runs containerd's CRI plugin: it gets the table;
    # a drop-in that configures none is left alone
    main = node_view.restrict_oom("version = 2\n", main=True)
    assert tomllib.loads(main)["plugins"]["io.containerd.grpc.v1.cri"] == {"restrict_oom_score_adj": True}
    assert node_view.restrict_oom("version = 2\n") == "version = 2\n"
    # spaces inside the header as TOML allows them, and version 2's table in literal quotes
    v2 = "version = 2\n[ plugins . 'io.containerd.grpc.v1.cri' ]\n  sandbox_image = 'pause'\n"
    assert tomllib.loads(node_view.restrict_oom(v2))["plugins"]["io.containerd.grpc.v1.cri"]["restrict_oom_score_adj"] is True


def test_no_main_config_gets_the_generated_one_only_where_needed(tmp_path):
    src, dst = tmp_path / "none", tmp_path / "view"
    assert node_view.sync(str(src), str(dst), "all", str(tmp_path), False, False) == []
    assert list(dst.iterdir()) == []
    node_view.sync(str(src), str(dst), "all", str(tmp_path), False, True)
    assert "restrict_oom_score_adj = true" in (dst / "config.toml").read_text()


def test_command_line_refuses_a_wrong_call(tmp_path):
    out = subprocess.run([sys.executable, str(FILES / "node_view.py"), "a", "b", "some"], capture_output=True, text=True)
    assert out.returncode == 2 and "usage: node_view.py" in out.stderr


def test_boot_record_and_key(lab, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    assert node_state.boot_key(str(state)) == ""
    node_state.boot_record(str(state), "incident", str(lab / "etc/containerd/config.toml"), "1.6.20", "flags")
    key = node_state.boot_key(str(state)).split()
    assert key[0] == "incident" and len(key[1]) == 64 and key[2:] == ["flags", "1.6.20"]
    node_state.boot_record(str(state), "reboot", str(tmp_path / "absent.toml"), "2.2.0", "f")
    assert node_state.boot_key(str(state)) == "reboot  f 2.2.0"   # no main config: no sha
    (state / "boot.json").write_text("[1, 2]")                     # not a record: treated as none
    assert node_state.boot_key(str(state)) == ""


def test_status_reads_the_running_runtimes_errors_and_how_a_process_ended(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    cri = tmp_path / "cri.json"
    cri.write_text(json.dumps({"config": {"containerd": {"defaultRuntimeName": "runc", "runtimes": {"runc": {}, "nvidia": {}}}}}))
    (state / "containerd.log").write_text(
        'time="x" level=info msg="loading plugin"\n'
        'time="x" level=warning msg="failed to load plugin io.containerd.grpc.v1.cri" error="invalid plugin config"\n'
        'time="x" level=error msg="something else"\n')
    (state / "kubelet.exit").write_text("137\n")
    out = node_state.status(str(state), "did one\x1fdid two", "10.213.0.2", "gil-x", "1", "1", "", "1", str(cri), "")
    assert out["runtimes_running"] == ["nvidia", "runc"] and out["default_runtime"] == "runc"
    assert out["actions"] == ["did one", "did two"] and out["changed"] is True
    assert len(out["containerd_errors"]) == 2 and "invalid plugin config" in out["containerd_errors"][0]
    assert out["ended"] == {"kubelet": {"exit_status": 137, "signal": 9}}
    assert out["kubelet"] is False and out["containerd"] is True
    # crictl said something that is not JSON: kept as the CRI's error
    cri.write_text("rpc error: code = Unavailable")
    out = node_state.status(str(state), "", "ip", "ns", "1", "1", "1", "1", str(cri), "")
    assert out["cri_error"] == "rpc error: code = Unavailable" and out["changed"] is False and "ended" not in out


# real-node.sh's failure as the role says it (tasks present.yml and rebooted.yml): its JSON line
# (die) when it refused, else - a command that failed under `set -e` prints none - its status and
# last stderr lines. A CI run of eb89ce6 met the second kind at a reboot; the role then failed in
# from_json instead of naming anything.
FAILED_RUNS = [
    ({"rc": 1, "stdout_lines": ['{"failed": true, "msg": "waited 120s for node lab-node-1 to turn Ready"}'],
      "stderr_lines": ["real-node: the node went down"]},
     "lab-node-1: waited 120s for node lab-node-1 to turn Ready"),
    ({"rc": 1, "stdout_lines": [], "stderr_lines": ["real-node: the node went down"] + ["line %d" % i for i in range(8)]},
     "lab-node-1: real-node.sh {cmd} ended with status 1 without saying why; its last lines: "
     "line 2 / line 3 / line 4 / line 5 / line 6 / line 7"),
]


@pytest.mark.parametrize("tasks,register,cmd", [("present.yml", "_real_node_converge", "converge"),
                                                ("rebooted.yml", "_real_node_reboot", "reboot")])
def test_the_scripts_failure_is_said_in_its_words_or_with_its_last_lines(tmp_path, tasks, register, cmd):
    import yaml
    task = [t for t in yaml.safe_load((ROOT / "roles/real_node/tasks" / tasks).read_text())
            if "ansible.builtin.fail" in t][0]
    play = [{"hosts": "localhost", "gather_facts": False, "vars": {"real_node_name": "lab-node-1"},
             "tasks": [{"ansible.builtin.debug": {"msg": task["ansible.builtin.fail"]["msg"]},
                        "vars": {register: run}} for run, _ in FAILED_RUNS]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    playbook = pathlib.Path(sys.executable).parent / "ansible-playbook"   # the venv's, beside pytest's Python
    out = subprocess.run([str(playbook), str(tmp_path / "play.yml")],
                         capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json",
                              "HOME": str(tmp_path), "ANSIBLE_LOCALHOST_WARNING": "False"})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    said = [t["hosts"]["localhost"]["msg"] for t in json.loads(out.stdout)["plays"][0]["tasks"]]
    assert said == [want.format(cmd=cmd) for _, want in FAILED_RUNS]
