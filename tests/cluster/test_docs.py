"""Every command the trainee guide and the docs show, run as printed.

The guide's (docs/steps.md) ```sh blocks run in order in one bash, from the project folder, as a
new trainee would type them - in a HOME of their own (so ~/gpuop, the cluster and the lab's state
folder are the test's, never a trainee's), with the control-plane binaries from the usual cache.
The guide ends graded: the test asserts that `ansible-playbook playbooks/grade.yml` passes all
eight steps.

README.md and the docs/*.md pages mark what runs as printed with `<!-- runs-as-printed -->` on
the line before a block (tests/doc_blocks.py: the marker, the order of the pages); their marked
```sh blocks run in that order in one bash, then each marked ```yaml block as a playbook from a
folder outside the checkout. Unmarked blocks are illustrations.
"""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import doc_blocks  # noqa: E402  (tests/doc_blocks.py: which blocks run as printed)

CACHE = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
FENCE = "`" * 3


def blocks(path, lang="sh"):
    text = (ROOT / path).read_text()
    return re.findall(r"^%s%s\n(.*?)^%s" % (FENCE, lang, FENCE), text, re.S | re.M)


def guide_script(path):
    """The guide's sh blocks in the order a trainee runs them: in each section the folded
    solution (<details>) first, then the section's checks, each block as printed."""
    text = (ROOT / path).read_text()
    ordered = []
    for section in re.split(r'(?=^<a id="[^"]+"></a>$)', text, flags=re.M):
        folded = "".join(re.findall(r"<details>.*?</details>", section, re.S))
        shown = re.sub(r"<details>.*?</details>", "", section, flags=re.S)
        ordered += blocks_in(folded) + blocks_in(shown)
    return ordered


def blocks_in(text, lang="sh"):
    return re.findall(r"^%s%s\n(.*?)^%s" % (FENCE, lang, FENCE), text, re.S | re.M)


def run_script(script, home, timeout=1200):
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=CACHE, ANSIBLE_FORCE_COLOR="0")
    env.pop("KUBECONFIG", None)
    env.pop("XDG_STATE_HOME", None)   # the lab's state folder under the test's HOME: a lab of its own
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
    for text in (en, zh):   # every step: a folded solution, and checks shown before it
        for n in range(1, 9):
            section = text.split('<a id="step-%d"></a>' % n, 1)[1].split('<a id="', 1)[0]
            assert section.count("<details>") == 1 and section.count("</details>") == 1, n
            folded = section.split("<details>", 1)[1].split("</details>", 1)[0]
            assert blocks_in(folded) and "grade_steps=%d" % n in section.split("<details>", 1)[0], n
            assert "grade_steps" not in folded, n

    def files(text):
        return sorted(set(re.findall(r"`(~/gpuop/[^`]+)`", text)))
    assert files(en) == files(zh) and len(files(en)) >= 12


def test_the_guide_runs_as_printed_and_passes_the_grader(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    script = "\n".join(guide_script("docs/steps.md"))
    assert sorted(guide_script("docs/steps.md")) == sorted(blocks("docs/steps.md"))   # every block, once
    try:
        out = run_script(script, home)
        assert out.returncode == 0, ("the guide's commands failed:\n" + out.stdout[-4000:]
                                     + out.stderr[-3000:])
        assert "right: fails without nvidia" in out.stdout
        for step in range(1, 9):
            assert "Step %d" % step in out.stdout and "1 of 1 passed" in out.stdout
        assert "8 of 8 passed" in out.stdout          # the guide's "Grade everything", as printed
        assert "Drill reboot PASS" in out.stdout       # the real node's fix, graded
        # after the whole guide - the real reboot included - the trainee's files still grade; step 8
        # compares rollout.txt with the live rollout, which the reboot moved on (the guide says why)
        graded = run_script("source .venv/bin/activate\n"
                            "ansible-playbook playbooks/grade.yml -e grade_steps=1,2,3,4,5,6,7", home)
        assert graded.returncode == 0 and "7 of 7 passed" in graded.stdout, graded.stdout[-3000:]
    finally:
        run_script("source .venv/bin/activate\nansible-playbook playbooks/teardown.yml", home)


def test_the_readme_runs_as_printed(tmp_path):
    """The marked shell commands of README.md and the docs pages, in the runner's order
    (`make test`, unmarked, is what CI itself runs), then each marked YAML example, from a folder
    outside the checkout, with the collection docs/collection.md just installed."""
    home = tmp_path / "home"
    home.mkdir()
    shell = doc_blocks.marked(lang="sh")
    assert shell and shell[0].page == "README.md" and shell[0].text == "make lab\n", shell[:1]
    assert not any("make test" in b.text for b in shell)
    script = "\n".join(b.text for b in shell)
    try:
        out = run_script(script, home)
        assert out.returncode == 0, ("the docs' commands failed:\n" + out.stdout[-4000:]
                                     + out.stderr[-3000:])
        assert "8 of 8 passed" in out.stdout and "status: skipped" in out.stdout
        assert "renameByDefault" in out.stdout            # ansible-doc of the installed collection
        examples = [b.text for b in doc_blocks.marked(lang="yaml")]
        assert len(examples) >= 3
        outside = tmp_path / "ops"
        outside.mkdir()
        for index, example in enumerate(examples):
            (outside / ("example%d.yml" % index)).write_text(example)
            env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
            env.pop("XDG_STATE_HOME", None)
            env.update(HOME=str(home), XDG_CACHE_HOME=CACHE, ANSIBLE_FORCE_COLOR="0",
                       PATH=str(ROOT / ".venv/bin") + ":" + env["PATH"])
            run = subprocess.run(["ansible-playbook", "-i", "localhost,", "example%d.yml" % index],
                                 cwd=outside, env=env, capture_output=True, text=True, timeout=300)
            assert run.returncode == 0 and "failed=0" in run.stdout, example + run.stdout[-3000:]
            assert "WARNING" not in run.stdout + run.stderr, run.stderr[-2000:]
    finally:
        run_script("source .venv/bin/activate\nansible-playbook playbooks/teardown.yml", home)


def test_the_terminal_guide_prints_a_solution_only_when_asked(tmp_path):
    """guide.yml: a step's checks and a pointer to its folded solution; -e solution=true adds it."""
    for lang, path in (("en", "docs/steps.md"), ("zh-CN", "docs/steps.zh-CN.md")):
        text = (ROOT / path).read_text()
        for step in (1, 7):
            section = text.split('<a id="step-%d"></a>' % step, 1)[1].split('<a id="', 1)[0]
            answer = blocks_in(section.split("<details>", 1)[1])[-1]
            check = blocks_in(section.split("<details>", 1)[0])[-1]
            cmd = "source .venv/bin/activate\nansible-playbook playbooks/guide.yml -e step=%d -e lang=%s" % (step, lang)
            folded, shown = run_script(cmd, tmp_path), run_script(cmd + " -e solution=true", tmp_path)
            assert folded.returncode == 0 and shown.returncode == 0, folded.stdout + shown.stdout
            assert check in folded.stdout and answer not in folded.stdout and "solution=true" in folded.stdout
            assert check in shown.stdout and answer in shown.stdout and "<details>" not in shown.stdout
