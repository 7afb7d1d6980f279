# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible's default output, except that a report meant for a person reads like one."""

from __future__ import annotations

DOCUMENTATION = r"""
name: lab_report
type: stdout
short_description: The default output, with plain-text reports and quiet expected failures
description:
  - Everything is printed as by C(ansible.builtin.default), except three things.
  - A task whose vars set C(lab_report_say) prints, after its usual status line, the
    result's C(msg) as plain text - a module's own summary for a person (what containerd
    would load, what the scheduler said, what a slot gets, how a rollout ended), without a
    C(debug) task of its own for it.
  - A task whose vars set C(lab_report_plain) prints its message as plain text - a
    C(debug) msg as it is, one line per line, unwrapped and unquoted, instead of a YAML dump;
    a failure as C(FAILED) and its message, without the source excerpt of the playbook. The
    play still fails and the run still exits non-zero.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout in configuration
"""

from ansible import constants as C  # noqa: E402
from ansible.plugins.callback.default import CallbackModule as DefaultCallback  # noqa: E402


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "lab_report"

    def _plain(self, result):
        task_vars = getattr(result.task, "vars", None) or {}
        return bool(task_vars.get("lab_report_plain"))

    def v2_runner_on_ok(self, result):
        text = result.result.get("msg")
        if self._plain(result) and isinstance(text, str) and self._display.verbosity < 2:
            self._display.display(text.rstrip("\n"))
            return
        super().v2_runner_on_ok(result)
        task_vars = getattr(result.task, "vars", None) or {}
        if task_vars.get("lab_report_say") and isinstance(text, str) and text and self._display.verbosity < 1:
            for line in text.rstrip("\n").split("\n"):
                self._display.display("  " + line)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if self._plain(result) and not ignore_errors and self._display.verbosity < 2:
            self._display.display("FAILED: %s" % result.result.get("msg", ""), color=C.COLOR_ERROR)
            return
        super().v2_runner_on_failed(result, ignore_errors=ignore_errors)
