# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster: a standard-library client (client.py), manifests compared and applied
(compare.py, apply.py), nodes shaped (nodes.py), Pods waited for (pods.py), DaemonSet rollouts
(rollout.py)."""
