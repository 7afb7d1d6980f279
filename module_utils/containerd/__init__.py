# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How containerd loads a config and its imports (loader.py), merges them per version
(merge.py), and the judgment containerd_merge returns (merge_report.py)."""
