# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options every module that writes a report with module_utils/lab/files.py shares.

A module keeps only what is its own: the description of O(dest) (what the report holds), or a
default that differs (C(backup: {default: true})) - the keys it gives replace the fragment's,
option by option. A module that takes only a file mode extends C(lab_files.mode).
"""


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  dest:
    description: Write the report here; missing folders are created.
    type: path
  backup:
    description:
      - Keep a timestamped copy of O(dest) (C(<dest>.<timestamp>~), beside it) when its content
        changes.
    type: bool
    default: false
  mode:
    description:
      - File mode of O(dest), as a quoted octal string such as V("0644"). Bits beyond V(0777)
        (setuid, setgid, sticky) are refused before anything is written.
    type: str
    default: "0644"
"""

    MODE = r"""
options:
  mode:
    description:
      - File mode of the file the module writes, as a quoted octal string such as V("0644").
        Bits beyond V(0777) (setuid, setgid, sticky) are refused before anything is written.
    type: str
    default: "0644"
"""
