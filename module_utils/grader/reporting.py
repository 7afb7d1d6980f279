# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The grade as people and CI read it: the text report, JUnit XML, the guide's section below a
failing step, and the step numbers as a user types them."""

from xml.sax.saxutils import escape, quoteattr


def parse_steps(value, default):
    """Step numbers from a list or the text forms a user types: 3, 1,2, [1,2]; (steps, error)."""
    if value is None or value == "":
        return default, None
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, str):
        items = [v for v in value.strip().strip("[]").replace(" ", "").split(",") if v != ""]
    else:
        return None, "steps must be step numbers 1-8, got %r" % (value,)
    steps = []
    for item in items:
        text = str(item).strip().strip("'\"")
        if not text.isdigit() or not 1 <= int(text) <= 8:
            return None, ("steps must be numbers 1-8 (as a list, or typed as 3, 1,2 or [1,2]); "
                          "not: %r" % (item,))
        steps.append(int(text))
    return sorted(set(steps)), None


def add_guide_advice(results, guide):
    """Below each failing step, the guide's section for it (docs/steps.md, its Chinese twin, and
    the terminal command that prints it)."""
    for step, res in results.items():
        if not res["passed"]:
            key = step if step.isdigit() else step.replace(" ", "-")
            anchor = "step-" + key if step.isdigit() else "drills"
            res["advice"].append("the guide's section: %s#%s (中文: %s#%s; in the terminal: "
                                 "ansible-playbook playbooks/guide.yml -e step=%s)" % (
                                     guide, anchor, guide.replace("steps.md", "steps.zh-CN.md"),
                                     anchor, key if step.isdigit() else "drills"))


def report_text(results, report_path=None, junit_path=None):
    """The grade as a person reads it: one PASS/FAIL line per step, reasons and advice below."""
    lines = []
    for step, res in results.items():
        label = ("Step %s" % step) if str(step).isdigit() else str(step).capitalize()
        lines.append("%-10s %s" % (label, "PASS" if res["passed"] else "FAIL"))
        for reason in res["reasons"]:
            lines.append("    - %s" % reason)
        for tip in res["advice"]:
            lines.append("    (advice) %s" % tip)
    failed = [k for k, v in results.items() if not v["passed"]]
    lines.append("")
    lines.append("%d of %d passed%s" % (len(results) - len(failed), len(results),
                                        "; failed: %s" % ", ".join(map(str, failed)) if failed else ""))
    for name, path in (("Report (JSON)", report_path), ("Report (JUnit)", junit_path)):
        if path:
            lines.append("%s: %s" % (name, path))
    return "\n".join(lines) + "\n"


def junit_xml(results, suite="gpu-incident-lab"):
    """The same results as JUnit XML: one test case per step, a failure with its reasons."""
    failed = sum(1 for v in results.values() if not v["passed"])
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<testsuite name=%s tests="%d" failures="%d">' % (quoteattr(suite), len(results), failed)]
    for step, res in results.items():
        name = ("step %s" % step) if str(step).isdigit() else str(step)
        out.append('  <testcase classname=%s name=%s>' % (quoteattr(suite), quoteattr(name)))
        if not res["passed"]:
            out.append('    <failure message=%s>%s</failure>' % (
                quoteattr(res["reasons"][0] if res["reasons"] else "failed"),
                escape("\n".join(res["reasons"] + ["advice: " + a for a in res["advice"]]))))
        elif res["advice"]:
            out.append('    <system-out>%s</system-out>' % escape("\n".join(res["advice"])))
        out.append('  </testcase>')
    out.append('</testsuite>')
    return "\n".join(out) + "\n"
