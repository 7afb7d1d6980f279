"""Every command the trainee guide (docs/steps.md) and the README show, run as printed.

The guide's ```sh blocks run in order in one bash, from the project folder, as a new trainee
would type them - in a HOME of their own (so ~/gpuop and the cluster are the test's, never a
trainee's), with the control-plane binaries from the usual cache. The guide ends graded: the
test asserts that `ansible-playbook playbooks/grade.yml` passes all eight steps.
"""
import os
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
FENCE = "`" * 3


def blocks(path, lang="sh"):
    text = (ROOT / path).read_text()
    return re.findall(r"^%s%s\n(.*?)^%s" % (FENCE, lang, FENCE), text, re.S | re.M)


def run_script(script, home, timeout=1200):
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=CACHE, ANSIBLE_FORCE_COLOR="0")
    env.pop("KUBECONFIG", None)
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_guides_say_the_same():
    """Chinese and English: the same sections, the same files, the same commands."""
    en, zh = (ROOT / "docs/steps.md").read_text(), (ROOT / "docs/steps.zh-CN.md").read_text()
    assert blocks("docs/steps.md") == blocks("docs/steps.zh-CN.md")
    assert blocks("docs/steps.md", "text") == blocks("docs/steps.zh-CN.md", "text")
    anchors = re.findall(r'<a id="([^"]+)"></a>', en)
    assert anchors == re.findall(r'<a id="([^"]+)"></a>', zh)
    assert ["step-%d" % n for n in range(1, 9)] == [a for a in anchors if a.startswith("step-")]

    def files(text):
        return sorted(set(re.findall(r"`(~/gpuop/[^`]+)`", text)))
    assert files(en) == files(zh) and len(files(en)) >= 12


def test_the_guide_runs_as_printed_and_passes_the_grader(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    script = "\n".join(blocks("docs/steps.md"))
    try:
        out = run_script(script, home)
        assert out.returncode == 0, ("the guide's commands failed:\n" + out.stdout[-4000:]
                                     + out.stderr[-3000:])
        assert "right: fails without nvidia" in out.stdout
        for step in range(1, 9):
            assert "Step %d" % step in out.stdout and "1 of 1 passed" in out.stdout
        graded = run_script("source .venv/bin/activate\nansible-playbook playbooks/grade.yml", home)
        assert graded.returncode == 0 and "8 of 8 passed" in graded.stdout, graded.stdout[-3000:]
    finally:
        run_script("source .venv/bin/activate\nansible-playbook playbooks/teardown.yml", home)


def test_the_readme_runs_as_printed(tmp_path):
    """The README's shell commands in order (`make test` is what CI itself runs), then each
    YAML example marked "runs as printed", from a folder outside the checkout, with the
    collection the README just installed."""
    home = tmp_path / "home"
    home.mkdir()
    script = "\n".join(b for b in blocks("README.md") if "make test" not in b)
    try:
        out = run_script(script, home)
        assert out.returncode == 0, ("the README's commands failed:\n" + out.stdout[-4000:]
                                     + out.stderr[-3000:])
        assert "8 of 8 passed" in out.stdout and "status: skipped" in out.stdout
        assert "renameByDefault" in out.stdout            # ansible-doc of the installed collection
        examples = [b for b in blocks("README.md", "yaml") if b.startswith("# runs as printed")]
        assert len(examples) >= 3
        outside = tmp_path / "ops"
        outside.mkdir()
        for index, example in enumerate(examples):
            (outside / ("example%d.yml" % index)).write_text(example)
            env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
            env.update(HOME=str(home), XDG_CACHE_HOME=CACHE, ANSIBLE_FORCE_COLOR="0",
                       PATH=str(ROOT / ".venv/bin") + ":" + env["PATH"])
            run = subprocess.run(["ansible-playbook", "-i", "localhost,", "example%d.yml" % index],
                                 cwd=outside, env=env, capture_output=True, text=True, timeout=300)
            assert run.returncode == 0 and "failed=0" in run.stdout, example + run.stdout[-3000:]
            assert "WARNING" not in run.stdout + run.stderr, run.stderr[-2000:]
    finally:
        run_script("source .venv/bin/activate\nansible-playbook playbooks/teardown.yml", home)
