# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options every module that runs nvidia-smi shares (module_utils/node/nvidia_smi.py NVIDIA_SMI_ARGS)."""


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  nvidia_smi:
    description:
      - The nvidia-smi command - a path used as given, or a name looked up on PATH (and
        C(/sbin), C(/usr/sbin), C(/usr/local/sbin)).
    type: str
    default: nvidia-smi
  driver_root:
    description:
      - Where a containerized driver lives (the GPU Operator's C(/run/nvidia/driver)). When
        O(nvidia_smi) is a name not on PATH and C(DRIVER_ROOT/usr/bin/) (or C(bin/),
        C(usr/local/bin/)) holds it - or the driver's own C(nvidia-smi) - it is run as
        C(chroot DRIVER_ROOT nvidia-smi), as the Operator's validator does.
      - Empty to search PATH only.
    type: path
    default: /run/nvidia/driver
"""
