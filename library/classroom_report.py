#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: the class's grades in one table (Markdown) and one JUnit XML."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: classroom_report
short_description: Write a classroom's grades as one Markdown table and one JUnit XML
description:
  - Takes what M(lab_grade) returned on each trainee host (or why a host could not be graded)
    and writes, in O(dest), C(class-report.md) - host x step, PASS or FAIL, the first reason of
    each failure - and C(class-report.xml), JUnit XML with one test suite per host.
  - The files hold no time stamp, so the same grades write the same bytes and a rerun reports
    no change. A file that would change shows with C(--diff); check mode writes nothing.
version_added: "1.2.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_attributes]
options:
  hosts:
    description:
      - Per host name, a dict with C(status) (V(graded), V(failed) or V(unreachable)), C(steps) -
        the C(steps) that M(lab_grade) returns - when graded, C(reason) when not, and C(lab),
        the words that say which lab the host runs (for example V(kwok-only (no root on this host))).
    type: dict
    required: true
  dest:
    description: Folder to write C(class-report.md) and C(class-report.xml) in (created if missing).
    type: path
    required: true
  title:
    description: The heading of the Markdown report.
    type: str
    default: Class grade
"""

EXAMPLES = r"""
- name: Write the class table on the controller
  classroom_report:
    dest: ~/.cache/gpu-incident-lab/classroom
    hosts:
      trainee-01:
        status: graded
        lab: kwok-only
        steps: {"1": {"passed": true, "reasons": [], "advice": []}}
      trainee-02:
        status: unreachable
        reason: "ssh: connect to host 10.0.0.12 port 22: No route to host"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
markdown:
  description: The Markdown report, as written.
  returned: always
  type: str
junit:
  description: The JUnit XML, as written.
  returned: always
  type: str
passed:
  description: Whether every host was graded and passed every graded step.
  returned: always
  type: bool
failed_hosts:
  description: Hosts with a failed step, or not graded.
  returned: always
  type: list
  elements: str
paths:
  description: The two files.
  returned: always
  type: list
  elements: str
"""

import os  # noqa: E402
import tempfile  # noqa: E402
from xml.sax.saxutils import escape, quoteattr  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

SUITE = "gpu-incident-lab"


def _step_order(key):
    return (0, int(key), "") if str(key).isdigit() else (1, 0, str(key))


def _label(key):
    return ("Step %s" % key) if str(key).isdigit() else str(key).capitalize()


def _cell(text):
    """Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def check_hosts(hosts):
    """A plain reason for the first malformed host entry, or None."""
    for name, entry in hosts.items():
        if not isinstance(entry, dict):
            return "hosts.%s must be a dict with status and steps (or reason), got %r" % (name, entry)
        status = entry.get("status")
        if status not in ("graded", "failed", "unreachable"):
            return ("hosts.%s.status must be graded, failed or unreachable, got %r"
                    % (name, status))
        steps = entry.get("steps")
        if status == "graded":
            if not isinstance(steps, dict) or not steps:
                return "hosts.%s.steps must be lab_grade's steps (a non-empty dict), got %r" % (name, steps)
            for key, res in steps.items():
                if not isinstance(res, dict) or not isinstance(res.get("passed"), bool):
                    return "hosts.%s.steps.%s must have passed: true or false, got %r" % (name, key, res)
    return None


def build(hosts, title=""):
    """(markdown, junit, failed_hosts) for the class."""
    names = sorted(hosts)
    columns = sorted({str(k) for h in hosts.values() for k in (h.get("steps") or {})}, key=_step_order)
    notes, failed_hosts = [], []
    rows = []
    for name in names:
        entry = hosts[name]
        lab = entry.get("lab") or "?"
        if entry["status"] != "graded":
            failed_hosts.append(name)
            notes.append("%s: not graded (%s) - %s" % (
                name, entry["status"], entry.get("reason") or "no reason given"))
            rows.append([name, lab] + ["-"] * len(columns)
                        + ["not graded [%d]" % len(notes)])
            continue
        steps = {str(k): v for k, v in entry["steps"].items()}
        cells, passed = [], 0
        for key in columns:
            res = steps.get(key)
            if res is None:
                cells.append("-")
            elif res["passed"]:
                passed += 1
                cells.append("PASS")
            else:
                reasons = [r for r in res.get("reasons") or [] if str(r).strip()]
                notes.append("%s, %s: %s" % (name, _label(key).lower(),
                                             reasons[0] if reasons else "failed (no reason given)"))
                cells.append("FAIL [%d]" % len(notes))
        if passed < len(steps):
            failed_hosts.append(name)
        rows.append([name, lab] + cells + ["%d of %d" % (passed, len(steps))])
    head = ["Host", "Lab"] + [_label(k) for k in columns] + ["Passed"]
    lines = ["# %s" % (title or "Class grade"), "",
             "%d trainee host%s, %s; %d passed everything." % (
                 len(names), "" if len(names) == 1 else "s",
                 "steps " + ", ".join(columns) if columns else "no step graded",
                 len(names) - len(failed_hosts)), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    if notes:
        lines += ["", "First reason of each failure:", ""]
        lines += ["%d. %s" % (i, _cell(note)) for i, note in enumerate(notes, 1)]
    markdown = "\n".join(lines) + "\n"
    return markdown, junit(hosts, names), failed_hosts


def junit(hosts, names):
    suites, total, failures, errors = [], 0, 0, 0
    for name in names:
        entry = hosts[name]
        props = '    <properties><property name="lab" value=%s/></properties>' % quoteattr(
            str(entry.get("lab") or "?"))
        if entry["status"] != "graded":
            errors += 1
            total += 1
            suites += ['  <testsuite name=%s hostname=%s tests="1" failures="0" errors="1">'
                       % (quoteattr(name), quoteattr(name)), props,
                       '    <testcase classname=%s name="grade">' % quoteattr(SUITE + "." + name),
                       '      <error message=%s>%s</error>' % (
                           quoteattr("not graded (%s)" % entry["status"]),
                           escape(str(entry.get("reason") or ""))),
                       '    </testcase>', '  </testsuite>']
            continue
        steps = sorted(((str(k), v) for k, v in entry["steps"].items()), key=lambda kv: _step_order(kv[0]))
        failed = sum(1 for _step, v in steps if not v["passed"])
        total += len(steps)
        failures += failed
        suites += ['  <testsuite name=%s hostname=%s tests="%d" failures="%d" errors="0">'
                   % (quoteattr(name), quoteattr(name), len(steps), failed), props]
        for key, res in steps:
            case = '    <testcase classname=%s name=%s' % (quoteattr(SUITE + "." + name),
                                                           quoteattr(_label(key).lower()))
            if res["passed"]:
                suites.append(case + "/>")
                continue
            reasons = [str(r) for r in res.get("reasons") or []]
            advice = ["advice: %s" % a for a in res.get("advice") or []]
            suites += [case + ">", '      <failure message=%s>%s</failure>' % (
                quoteattr(reasons[0] if reasons else "failed"), escape("\n".join(reasons + advice))),
                '    </testcase>']
        suites.append('  </testsuite>')
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<testsuites name=%s tests="%d" failures="%d" errors="%d">'
           % (quoteattr(SUITE + " classroom"), total, failures, errors)] + suites + ['</testsuites>']
    return "\n".join(out) + "\n"


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return ""


def main():
    module = AnsibleModule(
        argument_spec=dict(
            hosts=dict(type="dict", required=True),
            dest=dict(type="path", required=True),
            title=dict(type="str", default="Class grade"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    problem = check_hosts(p["hosts"])
    if problem:
        module.fail_json(msg="classroom_report: " + problem)
    markdown, xml, failed_hosts = build(p["hosts"], p["title"])
    dest = p["dest"]
    if os.path.exists(dest) and not os.path.isdir(dest):
        module.fail_json(msg="classroom_report: dest %s is a file, not a folder; give a folder "
                             "(the class reports go inside it)" % dest)
    files = [(os.path.join(dest, "class-report.md"), markdown),
             (os.path.join(dest, "class-report.xml"), xml)]
    changed, diffs = False, []
    for path, content in files:
        before = _read(path)
        if before == content:
            continue
        changed = True
        diffs.append({"before_header": path, "after_header": path,
                      "before": before or "", "after": content})
        if module.check_mode:
            continue
        try:
            os.makedirs(dest, mode=0o755, exist_ok=True)
            handle, tmp = tempfile.mkstemp(dir=dest, prefix=".class-report.")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(content)
            os.chmod(tmp, 0o644)
            module.atomic_move(tmp, path)
        except OSError as err:
            module.fail_json(msg="classroom_report: cannot write %s: %s; give a folder you can "
                                 "write (dest)" % (path, err.strerror or err))
    result = dict(changed=changed, markdown=markdown, junit=xml, passed=not failed_hosts,
                  failed_hosts=failed_hosts, paths=[f[0] for f in files])
    if module._diff and diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
