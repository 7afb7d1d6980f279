# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A classroom's grades - what lab_grade returned on each trainee host, or why a host could not
be graded - as one Markdown table (host x step, the first reason of each failure) and one JUnit
XML (a test suite per host). No time stamps: the same grades give the same bytes.

What the classroom_report module does, without Ansible. Refusals are ClassroomError (a LabError).
"""

import os
from xml.sax.saxutils import escape, quoteattr

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.files import replace_file


class ClassroomError(LabError):
    """A malformed host entry, or a dest that is not a folder that can be written."""


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


def class_report(module):
    """classroom_report: build both reports from module.params' hosts and write what differs
    into dest (check mode writes nothing; --diff shows each file). The module's result."""
    p = module.params
    problem = check_hosts(p["hosts"])
    if problem:
        raise ClassroomError("classroom_report: " + problem)
    markdown, xml, failed_hosts = build(p["hosts"], p["title"])
    dest = p["dest"]
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise ClassroomError("classroom_report: dest %s is a file, not a folder; give a folder "
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
            replace_file(module, path, content)
        except OSError as err:
            raise ClassroomError("classroom_report: cannot write %s: %s; give a folder you can "
                                 "write (dest)" % (path, err.strerror or err))
    result = dict(changed=changed, markdown=markdown, junit=xml, passed=not failed_hosts,
                  failed_hosts=failed_hosts, paths=[f[0] for f in files])
    if module._diff and diffs:
        result["diff"] = diffs
    return result
