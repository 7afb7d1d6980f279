"""strategy_plugins/mitogen_linear.py: Mitogen when installed, Ansible's linear otherwise."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The shell's parent is the interpreter that ran the module: Mitogen names its own
# "python(mitogen:user@host:pid)"; the standard executor starts a plain python each time.
PLAY = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.shell: "tr '\\\\0' ' ' < /proc/$PPID/cmdline"
      register: parent
      changed_when: false
    - ansible.builtin.debug:
        msg: "module ran in: {{ parent.stdout }}"
"""


def run_playbook(tmp_path, block_mitogen):
    (tmp_path / "play.yml").write_text(PLAY)
    site = tmp_path / "site"
    site.mkdir()
    if block_mitogen:  # a Python that cannot import mitogen, as on a machine without it
        (site / "sitecustomize.py").write_text("import sys\nsys.modules['ansible_mitogen'] = None\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PYTHONPATH=str(site), ANSIBLE_STRATEGY="mitogen_linear",
               ANSIBLE_STRATEGY_PLUGINS=str(ROOT / "strategy_plugins"), ANSIBLE_INVENTORY="localhost,",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_DEPRECATION_WARNINGS="false")
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    out = subprocess.run([ansible_playbook, "-c", "local", "play.yml"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    ran_in = [line for line in out.stdout.splitlines() if "module ran in:" in line]
    assert len(ran_in) == 1, out.stdout
    return out, ran_in[0]


def test_without_mitogen_the_lab_runs_linear_and_says_so(tmp_path):
    out, ran_in = run_playbook(tmp_path, block_mitogen=True)
    assert "mitogen is not installed" in out.stderr and "linear strategy" in out.stderr
    assert "(mitogen:" not in ran_in


def test_with_mitogen_modules_run_in_its_interpreter(tmp_path):
    out, ran_in = run_playbook(tmp_path, block_mitogen=False)
    assert "mitogen is not installed" not in out.stderr
    assert "(mitogen:" in ran_in
