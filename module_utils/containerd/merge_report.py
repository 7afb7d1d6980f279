# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containerd_merge module without Ansible: the loader model's judgment of a config and its
imports (containerd.merge.judge), set beside what the node's ``containerd config dump``
showed, and the lab's five-line merge.txt written from both.

Refusals: ObservationError (the observation given), ConfigError (the configs), LabFileError
(dest, mode) - all LabError; nothing is written before any of them.
"""

from ansible.module_utils.containerd.merge import judge, merge_report, runtimes_in_dump
from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.files import write_text
from ansible.module_utils.node.commands import run, which

# `containerd config dump` re-reads the files: a few seconds at most
DUMP_TIMEOUT = 60


class ObservationError(LabError):
    """observed_dump / observed_runtimes / observe cannot serve as the observation."""


class JudgmentFailed(LabError):
    """The judgment was made and says no: expected runtimes missing, or a restart would lose
    the default runtime (``result``: the module's result all the same)."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = {key: value for key, value in result.items() if key != "msg"}


def host_dump(path, root):
    """The text of `containerd --config PATH config dump` on this host (what its next start
    loads from that config); ObservationError naming why not."""
    if root not in ("/", "", None):
        raise ObservationError("observe runs this host's containerd, which reads the config's imports "
                               "as this host's paths, not under root=%s; nothing was written. Give the "
                               "node's dump as observed_dump instead" % root)
    binary = which("containerd")
    if not binary:
        raise ObservationError("observe: no containerd on this host's PATH (or in /usr/sbin, "
                               "/usr/local/sbin); nothing was written. Install it, or give what "
                               "the node's `containerd config dump` showed as observed_dump")
    done = run([binary, "--config", path, "config", "dump"], DUMP_TIMEOUT)
    if done.rc != 0:
        words = (done.err or done.out).decode("utf-8", "replace").strip().splitlines()
        raise ObservationError("observe: `%s --config %s config dump` failed (%s): %s; nothing was written"
                               % (binary, path, "exit %s" % done.rc if done.rc is not None else "did not run",
                                  words[-1] if words else "no output"))
    return done.out.decode("utf-8", "replace")


def observed(params):
    """The observed runtimes: observed_runtimes, or the runtimes of observed_dump or of the
    host's own dump (observe) - None when none is given."""
    runtimes = params["observed_runtimes"]
    if params.get("observe") and (runtimes is not None or params["observed_dump"] is not None):
        raise ObservationError("observe takes the observation from this host's containerd: give it "
                               "without observed_runtimes and observed_dump (or drop observe); "
                               "nothing was written")
    dump = host_dump(params["path"], params["root"]) if params.get("observe") else params["observed_dump"]
    if dump is not None:
        runtimes = runtimes_in_dump(dump)
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
    result["msg"] = "\n".join(["containerd %s would load: %s" % (params["containerd_version"],
                                                                 ", ".join(result["predicted_runtimes"]) or "none")]
                              + list(result["findings"]))
    if runtimes is not None:
        result["observed_runtimes"] = runtimes
        result["report"] = merge_report(result, runtimes)
    missing = expected_missing(result, params.get("expect_main_runtimes") or [],
                               params.get("expect_dropin_runtimes") or [])
    if missing:
        raise JudgmentFailed(missing, result)
    if params["dest"]:
        result.update(write_text(module, params["dest"], result["report"],
                                 mode=params["mode"], backup=params["backup"], raise_errors=True))
    if params.get("fail_on_broken_default") and result["default_runtime_name"] not in result["predicted_runtimes"]:
        raise JudgmentFailed(" ".join(result["findings"]) or "a restart would leave the default runtime %s "
                             "unconfigured" % result["default_runtime_name"], result)
    return result


def expected_missing(result, main, dropins):
    """What the parser did not read of the runtimes expected in the main file and the drop-ins
    (a message), or None."""
    lacking_main = [r for r in main if r not in result["main_runtimes"]]
    lacking_dropins = [r for r in dropins if r not in result["dropin_runtimes"]]
    if not (lacking_main or lacking_dropins):
        return None
    return ("Read back: the main file defines %s, the drop-ins %s (files loaded: %s), where %s were "
            "expected; check that imports reaches the drop-in folder."
            % (result["main_runtimes"], result["dropin_runtimes"], result["dropin_files"] or "none",
               ", ".join(lacking_main + lacking_dropins)))
