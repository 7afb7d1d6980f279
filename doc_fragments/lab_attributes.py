# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check mode / diff mode attributes of the lab's modules.

C(lab_attributes): a module that writes (full check mode - it writes nothing and says what it
would write - and a diff of what it writes). C(lab_attributes.read_only): a module that only
reads (check mode full, no diff). A module adds C(details) (or another C(support)) under its own
C(attributes:); its keys replace the fragment's, attribute by attribute.
"""


class ModuleDocFragment(object):
    # two literal strings: ansible-test's yamllint reads fragments as literals, not expressions
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and report what would change without changing it.
    support: full
  diff_mode:
    description: Returns details on what changed (or would change in check mode) with --diff.
    support: full
"""

    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and report what would change without changing it.
    support: full
  diff_mode:
    description: Returns details on what changed (or would change in check mode) with --diff.
    support: none
"""
