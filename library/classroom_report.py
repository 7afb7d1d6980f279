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

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.grader.classroom import ClassroomError, class_report  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            hosts=dict(type="dict", required=True),
            dest=dict(type="path", required=True),
            title=dict(type="str", default="Class grade"),
        ),
        supports_check_mode=True,
    )
    try:
        result = class_report(module)
    except ClassroomError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
