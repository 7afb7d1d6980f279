# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one bounded wait: look until what is awaited is there or the time is up, and when it is
up say what was awaited, for how long, and what was last seen.

Every wait of the lab goes through wait_until: a ServiceAccount before a create (kube/apply.py),
nodes Ready or posting a device plugin's devices (kube/nodes.py, a watch), a Pod's phase or
condition (kube/pods.py), a DaemonSet rollout settling (kube/rollout.py), the board's process
(roles/lab_board/files/board_control.py). A caller whose timeout is an answer, not a failure (a rollout that
did not settle, nodes still pending), catches WaitTimeout and reads ``last`` and ``waited``.
"""

import time

from ansible.module_utils.lab.refusals import LabError


class WaitTimeout(LabError):
    """The time was up: ``what`` was awaited for ``timeout`` s (``waited`` s measured), and
    ``last`` is what the last look returned (``seen`` its words in the message)."""

    def __init__(self, what, timeout, waited, last, seen):
        self.what = what
        self.timeout = timeout
        self.waited = waited
        self.last = last
        self.message = "waited %ss for %s; last seen: %s" % (timeout, what, seen)
        super().__init__(self.message)


def wait_until(what, check, timeout, interval=1.0, clock=time.monotonic, pause=time.sleep,
               describe=str):
    """Call check(left) until it says done, for at most `timeout` seconds, `interval` s apart
    (0 for a check that blocks by itself, e.g. a watch, which may use `left`: the seconds still
    to wait). check returns (done, seen). Returns (seen, seconds waited) once done; raises
    WaitTimeout (its message: "waited <timeout>s for <what>; last seen: <describe(seen)>") when
    a look that is not done comes at or after the timeout. check is called at least once, so a
    timeout of 0 is one look - and 0 s waited, however long that read took (a kept record is
    read, not waited for). What check raises propagates."""
    start = clock()
    waited = 0.0
    while True:
        done, seen = check(max(timeout - waited, 0))
        if done:
            return seen, clock() - start if timeout else 0.0
        waited = clock() - start
        if waited >= timeout:
            raise WaitTimeout(what, timeout, waited, seen, describe(seen))
        pause(interval)  # the poll interval of a wait bounded by timeout
