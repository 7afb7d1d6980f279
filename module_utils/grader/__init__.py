# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's grader (grade.py, module lab_grade) and the class table (classroom.py, module
classroom_report)."""
