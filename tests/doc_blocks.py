"""Which code blocks of the docs run as printed, and in what order.

A block runs as printed when the line right before its opening fence is the marker

    <!-- runs-as-printed -->                       tests/cluster/test_docs.py runs it
    <!-- runs-as-printed: tests/cluster/X.py -->   that test runs it (it reads the page itself)

Every other fenced block is an illustration. tests/cluster/test_docs.py runs the marked ``sh``
blocks of README.md and then of each docs/*.md page in PAGES order (pages not listed follow, by
name), in one bash, from the project folder; then each marked ``yaml`` block, in the same order,
as a playbook from a folder outside the checkout. The trainee guides (GUIDES) carry no marker:
their own test runs every ``sh`` block in them (each section's folded solution first), and
playbooks/guide.yml prints them in the terminal, where a marker would show.

tests/unit/docs/test_doc_blocks.py checks the parsing and that no page has a marked block the runner
would skip.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!--\s*runs-as-printed(?::\s*(?P<by>\S+))?\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<lang>[\w+-]*)\s*$")
RUNNER = "tests/cluster/test_docs.py"
LANGS = ("sh", "yaml")          # what RUNNER runs: sh in one bash, yaml as playbooks
GUIDES = ("docs/steps.md", "docs/steps.zh-CN.md")
# The order the runner takes the pages in: each page's commands may need what an earlier page
# set up (README: `make lab`; collection: the installed collection its yaml examples use).
PAGES = (
    "README.md",
    "docs/containerd.md",
    "docs/real-node.md",
    "docs/diagnosis.md",
    "docs/bundles.md",
    "docs/board.md",
    "docs/gpu-stack.md",
    "docs/toolkit.md",      # reads the lab folder's etc/containerd (README's `make lab`)
    "docs/sharing.md",
    "docs/lab.md",          # its fleet of 500 nodes after the pages that want three
    "docs/classroom.md",
    "docs/speed.md",
    "docs/collection.md",
)


class Block:
    """One fenced block: where it is, its language, its text, and who runs it (None: nobody)."""

    def __init__(self, page, line, lang, text, by):
        self.page, self.line, self.lang, self.text, self.by = page, line, lang, text, by

    def __repr__(self):
        return "%s:%d ```%s (runs: %s)" % (self.page, self.line, self.lang, self.by)


class MarkerError(Exception):
    """A marker that marks nothing (not right before an opening fence)."""


def parse(text, page="<text>"):
    """Every fenced block of a Markdown text, in order. A marker must be the line right before
    an opening fence; one anywhere else is refused, naming the page and line."""
    lines = text.splitlines()
    found, index, pending = [], 0, None
    while index < len(lines):
        line = lines[index]
        marker = MARKER.match(line.strip())
        if marker:
            if pending is not None:
                raise MarkerError("%s:%d: a marker with no code block right after it" % (page, pending[0]))
            pending = (index + 1, marker.group("by") or RUNNER)
            index += 1
            continue
        fence = FENCE.match(line)
        if fence:
            close = re.compile(r"^%s%s*\s*$" % (re.escape(fence.group("fence")), re.escape(fence.group("fence")[0])))
            end = index + 1
            while end < len(lines) and not close.match(lines[end]):
                end += 1
            body = "\n".join(lines[index + 1:end]) + "\n" if end > index + 1 else ""
            by = pending[1] if pending is not None and pending[0] == index else None
            found.append(Block(page, index + 1, fence.group("lang"), body, by))
            pending, index = None, end + 1
            continue
        if pending is not None:
            raise MarkerError("%s:%d: a marker with no code block right after it" % (page, pending[0]))
        index += 1
    if pending is not None:
        raise MarkerError("%s:%d: a marker with no code block right after it" % (page, pending[0]))
    return found


def pages(root=ROOT):
    """README.md and every docs/*.md page but the guides, in the runner's order."""
    present = ["README.md"] + sorted(str(p.relative_to(root)) for p in (root / "docs").glob("*.md"))
    present = [p for p in present if p not in GUIDES]
    listed = [p for p in PAGES if p in present]
    return listed + [p for p in present if p not in PAGES]


def marked(root=ROOT, lang=None, by=RUNNER):
    """The blocks `by` runs, in the runner's order of pages and then of the page."""
    out = []
    for page in pages(root):
        out += [b for b in parse((root / page).read_text(), page)
                if b.by == by and (lang is None or b.lang == lang)]
    return out
