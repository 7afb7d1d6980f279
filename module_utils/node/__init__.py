# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is read from a node: its commands run with a timeout (commands.py), nvidia-smi
(nvidia_smi.py), the one collector of a node's artefacts (collect.py: gpu_node_facts and
gpu_bundle_node), the facts gpu_node_facts reads of them (gpu_facts.py)."""
