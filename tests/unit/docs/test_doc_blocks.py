"""The "runs as printed" marker: parsed as documented, and no page marks a block nobody runs.

Cheap (reads Markdown only); the blocks themselves run in tests/cluster/test_docs.py.
"""
import subprocess
from lab_testing import ROOT  # tests/lab_testing.py

import pytest

import doc_blocks
from doc_blocks import MarkerError, parse

F = "`" * 3

SAMPLE = "\n".join([
    "# A page",
    "<!-- runs-as-printed -->",
    F + "sh",
    "make lab",
    F,
    "An illustration:",
    F + "sh",
    "rm -rf /",
    F,
    "<!--runs-as-printed-->",
    F + "yaml",
    "- hosts: localhost",
    F,
    "<!-- runs-as-printed: tests/cluster/test_classroom.py -->",
    F + "shell",
    "ansible-playbook playbooks/classroom.yml",
    F,
    "<!-- runs-as-printed -->",
    "````text",
    F + "sh",
    "inside a longer fence: not a block of its own",
    F,
    "````",
    "~~~sh",
    "echo tilde fence",
    "~~~",
    "",
])


def test_the_marker_marks_the_block_right_after_it_and_only_that():
    blocks = parse(SAMPLE, "sample.md")
    assert [(b.line, b.lang, b.by) for b in blocks] == [
        (3, "sh", doc_blocks.RUNNER),
        (7, "sh", None),
        (11, "yaml", doc_blocks.RUNNER),
        (15, "shell", "tests/cluster/test_classroom.py"),
        (19, "text", doc_blocks.RUNNER),
        (24, "sh", None),
    ]
    assert blocks[0].text == "make lab\n"
    assert blocks[4].text == F + "sh\ninside a longer fence: not a block of its own\n" + F + "\n"
    assert blocks[5].text == "echo tilde fence\n"


@pytest.mark.parametrize("text", [
    "<!-- runs-as-printed -->\n\n" + F + "sh\nmake lab\n" + F + "\n",     # a blank line between
    "<!-- runs-as-printed -->\nmake lab\n",                                # no block at all
    "text\n<!-- runs-as-printed -->\n",                                    # at the end
    "<!-- runs-as-printed -->\n<!-- runs-as-printed -->\n" + F + "sh\nx\n" + F + "\n",
])
def test_a_marker_that_marks_nothing_is_refused_naming_the_line(text):
    with pytest.raises(MarkerError, match=r"page.md:\d+: a marker with no code block"):
        parse(text, "page.md")


def test_a_marker_inside_a_block_is_text():
    text = F + "markdown\n<!-- runs-as-printed -->\n" + F + "\n"
    assert [b.by for b in parse(text)] == [None]


def test_pages_come_in_the_runners_order_and_unlisted_pages_follow(tmp_path):
    (tmp_path / "docs").mkdir()
    for page in ("README.md", "docs/zeta.md", "docs/collection.md", "docs/alpha.md",
                 "docs/lab.md", "docs/steps.md", "docs/steps.zh-CN.md"):
        (tmp_path / page).write_text("# page\n")
    assert doc_blocks.pages(tmp_path) == ["README.md", "docs/lab.md", "docs/collection.md",
                                          "docs/alpha.md", "docs/zeta.md"]


def markdown_files():
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [p for p in listed if (ROOT / p).is_file()]


def test_no_page_marks_a_block_the_runner_would_skip():
    """Each marked block is one its runner runs: tests/cluster/test_docs.py runs sh and yaml
    blocks of README.md and docs/*.md; another test named in a marker exists and reads that page.
    The guides and every other Markdown file (roles' READMEs, bench/, CONTRIBUTING.md) carry no
    marker - nothing would run it."""
    runner_pages = set(doc_blocks.pages())
    problems = []
    for page in markdown_files():
        for block in parse((ROOT / page).read_text(), page):
            if block.by is None:
                continue
            if page not in runner_pages:
                problems.append("%r: no runner reads %s" % (block, page))
            elif block.by == doc_blocks.RUNNER:
                if block.lang not in doc_blocks.LANGS:
                    problems.append("%r: %s runs only %s blocks" % (block, block.by, doc_blocks.LANGS))
            elif not (ROOT / block.by).is_file() or page not in (ROOT / block.by).read_text():
                problems.append("%r: %s does not exist or does not read %s" % (block, block.by, page))
    assert not problems, "\n".join(problems)


def test_the_runner_starts_with_make_lab_and_installs_the_collection_before_the_examples():
    shell = doc_blocks.marked(lang="sh")
    assert shell[0].page == "README.md" and shell[0].text == "make lab\n"
    assert not any("make test" in b.text for b in shell)       # CI runs that; the docs test cannot
    assert any("ansible-galaxy collection install" in b.text for b in shell)
    assert len(doc_blocks.marked(lang="yaml")) >= 3
    commands = "\n".join(b.text for b in shell)
    for needed in ("playbooks/grade.yml", "playbooks/preflight.yml", "ansible-doc gpu_incident.lab"):
        assert needed in commands, needed   # what test_the_readme_runs_as_printed asserts on


def test_the_guides_run_whole_and_carry_no_marker():
    for guide in doc_blocks.GUIDES:
        blocks = parse((ROOT / guide).read_text(), guide)
        assert blocks and not [b for b in blocks if b.by], guide
