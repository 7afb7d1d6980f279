# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a command on a GPU node and reading its files: one runner for every node-side tool.

gpu_node_facts, gpu_bundle_node (bundle.node_side.collect_node), gpu_driver_version
(nvidia_smi) and gpu_preflight find their commands with :func:`which`, run them with
:func:`run` (a bounded wait; never raises), and read logs with :func:`read_tail`.
:class:`Runner` adds what gpu_node_facts reports: each command run, its exit code and first
lines. Ansible-free.
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


class Runner(object):
    """Runs commands and keeps ``checks``: [{command, rc (None: not installed or could not
    start; "timeout"), output (first lines)}] - what gpu_node_facts returns as evidence."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.checks = []

    def note(self, command, rc, output):
        self.checks.append({"command": command, "rc": rc, "output": output})

    def run(self, argv, shown=None):
        """(rc, stdout, stderr) as text - rc "timeout" when it gave no answer in time - or None
        when argv[0] is not installed or could not start."""
        path = which(argv[0])
        shown = shown or " ".join(argv)
        if not path:
            self.note(shown, None, "not found")
            return None
        done = run([path] + list(argv[1:]), self.timeout)
        if done.timed_out:
            self.note(shown, "timeout", "no answer within %ss" % self.timeout)
            return ("timeout", "", "%s gave no answer within %ss" % (shown, self.timeout))
        if done.rc is None:
            self.note(shown, None, done.err.decode("utf-8", "replace"))
            return None
        out = done.out.decode("utf-8", "replace")
        err = done.err.decode("utf-8", "replace")
        self.note(shown, done.rc, (out or err).strip().splitlines()[:3])
        return done.rc, out, err

    def read(self, path, limit=None):
        """The text of a file (its last `limit` bytes), noted as a check; None when unreadable."""
        try:
            data = read_tail(path, limit)
        except OSError as exc:
            self.note("read %s" % path, None, exc.strerror or str(exc))
            return None
        return data.decode("utf-8", "replace")
