# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a command on a GPU node and reading its files: one runner for every node-side tool.

The node collector (collect.py, behind gpu_node_facts and gpu_bundle_node), gpu_driver_version
(nvidia_smi) and gpu_preflight find their commands with :func:`which`, run them with
:func:`run` (a bounded wait; never raises), and read logs with :func:`read_tail`. Ansible-free.
"""

import collections
import os
import shutil
import subprocess

# where system tools live when PATH lacks them (as AnsibleModule.get_bin_path looks)
SBIN = ("/sbin", "/usr/sbin", "/usr/local/sbin")

Ran = collections.namedtuple("Ran", "rc out err timed_out")
Ran.__doc__ = """One run: rc (None when it could not start or gave no answer in time), out and err
(bytes; err says why for rc None), timed_out."""


def which(name):
    """The path of an executable: a path as given (when it is an executable file), a name on
    PATH or in SBIN; None when there is none."""
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    return next((os.path.join(d, name) for d in SBIN if os.access(os.path.join(d, name), os.X_OK)),
                None)


def run(argv, timeout, merge=False, env=None):
    """Run argv (argv[0] a path or a name on PATH) for at most `timeout` seconds: a Ran.
    `merge`: stderr into stdout (the command's words in the order printed)."""
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                              timeout=timeout, check=False, env=env)
    except subprocess.TimeoutExpired:
        return Ran(None, b"", b"timed out after %d s" % timeout, True)
    except OSError as exc:
        return Ran(None, b"", str(exc).encode(), False)
    return Ran(done.returncode, done.stdout or b"", done.stderr or b"", False)


def read_tail(path, limit):
    """The last `limit` bytes of a file (all of it for a false limit); OSError passes."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - limit) if limit else 0)
        return handle.read()
