# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every domain shares: the refusal root (refusals.py), writes with check mode and diff
(files.py), the PyYAML guard (yaml_load.py), the one bounded wait (wait.py)."""
