# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layered diagnosis of a GPU Pod; its public face is layers.py (CONTRIBUTING.md maps the files)."""
