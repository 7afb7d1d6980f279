# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's grader: one definition of "step N is right"."""

from ansible.module_utils.lab_grader.cluster_steps import (  # noqa: F401
    HAS_YAML, YAML_IMPORT_ERROR, Grader, junit_xml, report_text)
