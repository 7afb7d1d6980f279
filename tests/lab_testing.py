"""What the tests share that is not a fixture: where things are (the project, the corpora under
tests/), and the one way a test waits for something (``wait_for``, over module_utils/lab/wait.py's
``wait_until``). tests/conftest.py puts this folder on sys.path: ``from lab_testing import ROOT``.

The tests mirror the code (CONTRIBUTING.md, "Tests"): tests/unit/<package>/ for module_utils'
packages, tests/unit/library/ for the modules' main() and docs, tests/unit/roles/, playbooks/,
plugins/, tools/, toolchain/, docs/ for what those folders hold; tests/cluster/ against real
control planes. The corpora stay here, beside this file.
"""
import pathlib

import pytest

from ansible.module_utils.lab.wait import WaitTimeout, wait_until

TESTS = pathlib.Path(__file__).resolve().parent
ROOT = TESTS.parent


def wait_for(what, check, timeout=60, interval=0.3):
    """check() until it returns something true, at most `timeout` s, `interval` s apart; return
    that value. When the time is up the test fails saying what was awaited, for how long and what
    check() last returned ("waited <timeout>s for <what>; last seen: ..."). What check raises
    propagates (a process that died fails the wait at once). The lab's own bounded wait
    (module_utils/lab/wait.py) does the waiting: the tests keep no deadline loop of their own."""
    def look(_left):
        value = check()
        return bool(value), value
    try:
        return wait_until(what, look, timeout, interval=interval)[0]
    except WaitTimeout as timeout_up:
        pytest.fail(str(timeout_up), pytrace=False)
