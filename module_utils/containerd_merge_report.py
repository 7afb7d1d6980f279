# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containerd_merge module without Ansible: the loader model's judgment of a config and its
imports (containerd_loader.judge), set beside what the node's ``containerd config dump``
showed, and the lab's five-line merge.txt written from both.

Refusals: ObservationError (the observation given), ConfigError (the configs), LabFileError
(dest, mode) - all LabError; nothing is written before any of them.
"""

from ansible.module_utils.containerd_loader import judge, merge_report, runtimes_in_dump
from ansible.module_utils.lab_errors import LabError
from ansible.module_utils.lab_files import write_text


class ObservationError(LabError):
    """observed_dump / observed_runtimes cannot serve as the observation."""


def observed(params):
    """The observed runtimes: observed_runtimes, or the runtimes of observed_dump (None - none
    given)."""
    runtimes = params["observed_runtimes"]
    if params["observed_dump"] is not None:
        runtimes = runtimes_in_dump(params["observed_dump"])
        if not runtimes:
            raise ObservationError(
                "observed_dump lists no runtime table ([plugins.\"io.containerd.grpc.v1.cri\"."
                "containerd.runtimes.<name>] or the 2.x spelling): it is empty or not the output "
                "of `containerd config dump`; nothing was written. Give the node's whole dump, "
                "or observed_runtimes")
    if params["dest"] and runtimes is None:
        raise ObservationError("dest needs an observation: give observed_runtimes (what "
                               "`containerd config dump` showed on the node) or observed_dump")
    return runtimes


def merge_check(module):
    """containerd_merge: judge the config of module.params for its containerd version; with an
    observation, the merge report, written to dest. The module's result."""
    params = module.params
    runtimes = observed(params)
    result = judge(params["path"], params["containerd_version"], runtimes,
                   params["working_dir"], params["root"])
    result["changed"] = False
    if runtimes is not None:
        result["observed_runtimes"] = runtimes
        result["report"] = merge_report(result, runtimes)
    if params["dest"]:
        result.update(write_text(module, params["dest"], result["report"],
                                 mode=params["mode"], backup=params["backup"], raise_errors=True))
    return result
