# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU support bundle: what it holds (contents.py), its cluster and node halves
(cluster_side.py, node_side.py), gpu_bundle_collect's call (collect.py), the redaction engine
(redact.py, its rules redact_rules.py) and the archive (archive.py)."""
