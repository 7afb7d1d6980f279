# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""PyYAML, or why it is missing: the one import guard the modules share.

A module that needs YAML checks ``HAS_YAML`` first and fails with
``missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR`` - never an ImportError trace.
"""

try:
    # re-exported: from ansible.module_utils.lab.yaml_load import yaml
    import yaml  # noqa: F401 pylint: disable=unused-import
    HAS_YAML = True
    YAML_IMPORT_ERROR = None
except ImportError:  # the modules that need it fail with missing_required_lib
    import traceback
    yaml = None
    HAS_YAML = False
    YAML_IMPORT_ERROR = traceback.format_exc()
