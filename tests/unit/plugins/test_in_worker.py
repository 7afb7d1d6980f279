"""The lab's modules run inside Ansible's worker on the local host (action_plugins/lab_in_worker.py)
and give the same results as the normal AnsiballZ path: changes, diffs, check mode, refusals.

The proof that the fast path is taken: with an interpreter that does not exist, the normal path
cannot start the module at all, the in-worker path never needs one.
"""
import base64
import json
import os
import re
import subprocess
import sys
from lab_testing import ROOT  # tests/lab_testing.py

import pytest

PLAYBOOK = ROOT / ".venv/bin/ansible-playbook"
CORPUS = ROOT / "tests/containerd_corpus/01-lab-incident"

TASKS = """
- hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "{interpreter}"
  tasks:
    - name: create two files and a folder
      text_files:
        dirs: ["{root}/k8s"]
        files:
          - {{path: "{root}/out/a.txt", content: "one\\n"}}
          - {{path: "{root}/out/b.sh", content: "#!/bin/sh\\n", mode: "0755"}}
      register: created
    - name: the same again
      text_files:
        files:
          - {{path: "{root}/out/a.txt", content: "one\\n"}}
      register: same
    - name: a change, in check mode, with a diff
      text_files:
        files:
          - {{path: "{root}/out/a.txt", content: "two\\n"}}
      check_mode: true
      diff: true
      register: checked
    - name: a bad mode is refused by name
      text_files:
        files:
          - {{path: "{root}/out/c.txt", content: "x", mode: "99"}}
      register: refused
      ignore_errors: true
    - name: an unknown option is refused by Ansible's argument spec
      text_files:
        nope: 1
      register: unknown
      ignore_errors: true
    - name: judge the incident's merge
      containerd_merge:
        path: "{root}/cfg/config.toml"
      register: merge
    # Ansible's own modules, in the worker too (the lab_preload callback installs it for every action)
    - name: a command
      ansible.builtin.command:
        argv: [sh, -c, "echo out; echo err >&2; exit 3"]
      register: command
      ignore_errors: true
    - name: a shell pipe
      ansible.builtin.shell: "printf 'a\\nb\\n' | wc -l"
      register: shell
      changed_when: false
    - name: copy, then the same copy, then a change in check mode with a diff
      ansible.builtin.copy:
        dest: "{root}/out/copied.txt"
        content: "{{{{ item }}}}\n"
      check_mode: "{{{{ ansible_loop.index == 3 }}}}"
      diff: true
      loop: [first, first, second]
      loop_control: {{extended: true}}
      register: copied
    - name: a template (its stat, copy and file modules)
      ansible.builtin.template:
        src: "{root}/in.j2"
        dest: "{root}/out/templated.txt"
        mode: "0640"
      register: templated
    - name: a line in a file (lineinfile writes through the module's own temporary folder)
      ansible.builtin.lineinfile:
        path: "{root}/out/copied.txt"
        line: "added"
      register: lined
    - name: stat and slurp
      ansible.builtin.stat:
        path: "{root}/out/templated.txt"
      register: stat
    - name: slurp
      ansible.builtin.slurp:
        src: "{root}/out/copied.txt"
      register: slurped
    - name: a folder made and removed
      ansible.builtin.file:
        path: "{root}/out/gone/deeper"
        state: "{{{{ item }}}}"
      loop: [directory, absent]
      register: folder
    - name: keep the results
      ansible.builtin.copy:
        dest: "{root}/results.json"
        content: "{{{{ dict(created=created, same=same, checked=checked, refused=refused, unknown=unknown, merge=merge,
                           command=command, shell=shell, copied=copied, templated=templated, lined=lined,
                           stat=stat, slurped=slurped, folder=folder) | to_json }}}}"
      delegate_to: localhost
      vars:
        ansible_python_interpreter: "{python}"
"""


def run(tmp_path, name, in_worker, interpreter):
    root = tmp_path / name
    root.mkdir()
    for src in CORPUS.rglob("*.toml"):   # the incident's two files, @DIR@ made this folder
        dest = root / "cfg" / src.relative_to(CORPUS)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(src.read_text().replace("@DIR@", str(root / "cfg")))
    (root / "in.j2").write_text("made from {{ inventory_hostname }}\n")
    (root / "module-tmp").mkdir()
    book = root / "play.yml"
    book.write_text(TASKS.format(root=root, python=sys.executable, interpreter=interpreter))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_REMOTE_TMP=str(root / "module-tmp"),
               GPU_INCIDENT_LAB_IN_WORKER="1" if in_worker else "0")
    proc = subprocess.run([str(PLAYBOOK), "-i", "localhost,", "-c", "local", str(book)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return proc, root


# what differs between any two runs: clocks, the file's inode, the action's temporary names (in invocation)
VOLATILE = {"start", "end", "delta", "inode", "atime", "mtime", "ctime", "version", "invocation"}


def comparable(results):
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
        return [strip(v) for v in value] if isinstance(value, list) else value
    out = {}
    for key, result in results.items():
        result = {k: v for k, v in result.items()
                  if k not in ("invocation", "ansible_facts", "exception", "_ansible_no_log")}
        text = json.dumps(strip(result)).replace("/in-worker/", "/ROOT/").replace("/normal/", "/ROOT/")
        out[key] = json.loads(re.sub(r"ansible-tmp-[0-9.]+-[0-9]+-[0-9]+", "ansible-tmp-X", text))
    return out


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("in-worker")
    fast, fast_root = run(tmp, "in-worker", True, "/nonexistent/python3")
    slow, slow_root = run(tmp, "normal", False, sys.executable)
    return fast, fast_root, slow, slow_root


def test_in_worker_runs_without_an_interpreter_and_agrees_with_ansiballz(both):
    fast, fast_root, slow, slow_root = both
    assert fast.returncode == 0, fast.stdout[-3000:]
    assert slow.returncode == 0, slow.stdout[-3000:]
    fast_results = json.loads((fast_root / "results.json").read_text())
    slow_results = json.loads((slow_root / "results.json").read_text())
    assert comparable(fast_results) == comparable(slow_results)
    r = fast_results
    assert r["created"]["changed"] and not r["same"]["changed"]
    assert oct((fast_root / "out/b.sh").stat().st_mode & 0o777) == "0o755"
    assert r["checked"]["changed"] and (fast_root / "out/a.txt").read_text() == "one\n"
    assert r["checked"]["diff"][0]["after"] == "two\n"
    assert r["refused"]["failed"] and "'99' is not an octal file mode" in r["refused"]["msg"]
    assert not (fast_root / "out/c.txt").exists()
    assert r["unknown"]["failed"] and "nope" in r["unknown"]["msg"]
    assert r["merge"]["main_runtimes"] == ["runc"] and r["merge"]["dropin_runtimes"] == ["nvidia"]
    assert r["merge"]["conflict"] is True
    # Ansible's own modules ran in the worker too (no interpreter), with the normal path's results
    assert r["command"]["rc"] == 3 and r["command"]["failed"] and r["command"]["stdout"] == "out"
    assert r["command"]["stderr"] == "err" and r["shell"]["stdout"] == "2"
    assert [c["changed"] for c in r["copied"]["results"]] == [True, False, True]
    assert r["copied"]["results"][2]["diff"][0]["after"].rstrip() == "second"
    assert r["templated"]["changed"] and (fast_root / "out/templated.txt").read_text() == "made from localhost\n"
    assert oct((fast_root / "out/templated.txt").stat().st_mode & 0o777) == "0o640"
    assert r["lined"]["changed"] and (fast_root / "out/copied.txt").read_text().split() == ["first", "added"]
    assert r["stat"]["stat"]["exists"] and r["stat"]["stat"]["mode"] == "0640"
    assert base64.b64decode(r["slurped"]["content"]).decode() == (fast_root / "out/copied.txt").read_text()
    assert [f["state"] for f in r["folder"]["results"]] == ["directory", "absent"]
    assert (fast_root / "out/gone").is_dir() and not (fast_root / "out/gone/deeper").exists()
    # what a module leaves for its exit (AnsibleModule.tmpdir's removal) ran when it ended, in the
    # worker as in its own process: no module's temporary folder is left on either path
    for root in (fast_root, slow_root):
        assert not list((root / "module-tmp").glob("ansible-moduletmp-*")), root


def test_the_normal_path_really_needs_the_interpreter(tmp_path):
    slow, _root = run(tmp_path, "normal", False, "/nonexistent/python3")
    assert slow.returncode != 0
    assert "/nonexistent/python3" in slow.stdout


def _action_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("lab_in_worker_under_test", ROOT / "action_plugins/lab_in_worker.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("switch, version, in_collection, expected", [
    (None, "2.19.14", False, (True, None)),      # the lab: on by default
    ("0", "2.19.14", False, (False, None)),      # turned off, nothing to say
    (None, "2.19.0", True, (False, None)),       # the installed collection: off unless opted in
    ("1", "2.19.3", True, (True, None)),         # opted in
    ("1", "2.20.1", True, (False, "2.20.1")),    # another series: steps aside, says why
    (None, "2.18.7", False, (False, "2.18.7")),
    ("0", "2.20.1", False, (False, None)),       # off anyway: no warning
])
def test_the_in_worker_decision(switch, version, in_collection, expected):
    worker = _action_module()
    environ = {} if switch is None else {"GPU_INCIDENT_LAB_IN_WORKER": switch}
    on, why = worker.decision(environ, version, in_collection)
    assert on is expected[0]
    if expected[1] is None:
        assert why is None
    else:
        assert why.startswith("ansible-core %s: " % expected[1]) and "written for ansible-core 2.19.x" in why
        assert "run the normal way (AnsiballZ)" in why


def test_an_other_ansible_core_runs_the_normal_way_and_says_so_once(tmp_path):
    """On an ansible-core the runner was not written for, the lab's modules still run (the
    normal way) and the run says why, once - not once per task."""
    root = tmp_path / "lab"
    site = tmp_path / "site"
    site.mkdir()
    # the worker believes it runs under another ansible-core (the decision reads the release)
    # (in the controller and its forked workers only; module processes are left alone)
    (site / "sitecustomize.py").write_text("import sys\nif sys.argv[0].endswith('ansible-playbook'):\n"
                                           "    import ansible.release\n    ansible.release.__version__ = '2.99.0'\n")
    playbook = tmp_path / "p.yml"
    playbook.write_text("""
- hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "%s"
  tasks:
    - text_files:
        files: [{path: "%s/a.txt", content: "one\\n"}]
    - text_files:
        files: [{path: "%s/b.txt", content: "two\\n"}]
""" % (sys.executable, root, root))
    env = dict(os.environ, PYTHONPATH=str(site), ANSIBLE_FORCE_COLOR="0")
    env.pop("GPU_INCIDENT_LAB_IN_WORKER", None)
    out = subprocess.run([str(PLAYBOOK), "-i", "localhost,", "-c", "local", str(playbook)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (root / "a.txt").read_text() == "one\n" and (root / "b.txt").read_text() == "two\n"
    said = (out.stdout + out.stderr).count("the lab's in-worker module runs were written for ansible-core 2.19.x")
    assert said == 1, out.stdout + out.stderr
