# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU sharing: the device plugin's config and slots, MIG tables and listings, the
time-slicing / MPS / MIG plans side by side."""
