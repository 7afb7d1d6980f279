# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One archive to send, and its safe reading back.

:func:`write` puts a bundle's files (already redacted, from memory - never re-read from disk,
so no link or stray file of the folder can slip in) into ``<dest>.tar.gz``: mode 0600, written
beside it and renamed into place, every member under one relative folder named like dest,
regular files 0600 and folders 0700 only, owner 0/0 with no user or group names (the archive
says nothing about who collected it), modification time the collection's.

:func:`unpacked` gives gpu_diagnose a folder for ``bundle:`` - the folder itself, or an archive
extracted into a private temporary folder that is removed afterwards. Extraction writes each
member itself and refuses, naming the member: absolute names, ``..``, links (symbolic and hard),
devices and FIFOs, a member twice, more than MAX_MEMBERS members or MAX_BYTES bytes in all.
"""

import calendar
import contextlib
import io
import os
import shutil
import tarfile
import tempfile
import time

from ansible.module_utils.lab.refusals import LabError

MAX_MEMBERS = 100000
MAX_BYTES = 4 * 1024 * 1024 * 1024


class ArchiveError(LabError):
    """An archive that cannot be written or read safely; the text names the member and the fix."""


def check_target(path, replace):
    """ArchiveError when path cannot take the archive: not a regular file, or (without replace)
    an archive already there."""
    if not os.path.lexists(path):
        return
    if os.path.islink(path) or not os.path.isfile(path):
        raise ArchiveError("%s exists and is not a regular file: nothing is written there; move it away or "
                           "give another dest" % path)
    if not replace:
        raise ArchiveError("%s already exists (an earlier bundle's archive?): kept as it is; give another "
                           "dest, or force (-e force=true) to replace it" % path)


def _epoch(stamp):
    try:
        return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return int(time.time())


def write(path, files, top, collected_at=None):
    """Write {relpath: bytes} as the gzip tar archive path, members under `top`/ (see module doc)."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    mtime = _epoch(collected_at)
    fd, stage = tempfile.mkstemp(prefix=".%s.partial-" % os.path.basename(path), dir=parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as raw:
            with tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
                folders = set()
                for rel in sorted(files):
                    parts = rel.split("/")
                    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
                        raise ArchiveError("refusing an archive member outside the bundle: %r" % rel)
                    for depth in range(len(parts)):
                        name = "/".join([top] + parts[:depth])
                        if name in folders:
                            continue
                        folders.add(name)
                        info = tarfile.TarInfo(name)
                        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o700, mtime
                        tar.addfile(info)
                    info = tarfile.TarInfo("/".join([top] + parts))
                    info.size, info.mode, info.mtime = len(files[rel]), 0o600, mtime
                    tar.addfile(info, io.BytesIO(files[rel]))
        os.rename(stage, path)
        stage = None
    finally:
        if stage:
            os.unlink(stage)


def _member_problem(member):
    name = member.name
    parts = name.replace("\\", "/").split("/")
    if name.startswith("/") or name.startswith("\\") or (len(name) > 1 and name[1] == ":"):
        return "an absolute name"
    if ".." in parts:
        return "'..' in its name"
    if member.issym() or member.islnk():
        return "a link (to %s)" % member.linkname
    if not (member.isfile() or member.isdir()):
        return "not a file or folder (a device, FIFO or other special member)"
    return None


def extract(archive, into):
    """Extract archive into the folder `into` (which exists, empty), member by member; ArchiveError
    naming the first member refused. Files 0600, folders 0700."""
    try:
        with tarfile.open(archive, mode="r:*") as tar:
            _extract(tar, archive, os.path.realpath(into))
    except (OSError, tarfile.TarError, EOFError, ValueError) as exc:
        raise ArchiveError("%s is not a tar archive (.tar.gz) this can read to its end: %s; give the bundle's "
                           "folder, or its archive as gpu_bundle_collect wrote it" % (archive, exc))


def _extract(tar, archive, into):
    total, count, seen = 0, 0, set()
    for member in tar:
        count += 1
        if count > MAX_MEMBERS:
            raise ArchiveError("%s has more than %d members: not a support bundle" % (archive, MAX_MEMBERS))
        problem = _member_problem(member)
        if problem:
            raise ArchiveError("%s: member %r is refused - %s; a support bundle archive holds only files "
                               "and folders under one relative folder" % (archive, member.name, problem))
        target = os.path.realpath(os.path.join(into, member.name))
        if os.path.commonpath([into, target]) != into:
            raise ArchiveError("%s: member %r lands outside the folder; refused" % (archive, member.name))
        if member.isdir():
            os.makedirs(target, mode=0o700, exist_ok=True)
            continue
        if target in seen:
            raise ArchiveError("%s: member %r comes twice; refused" % (archive, member.name))
        seen.add(target)
        total += member.size
        if total > MAX_BYTES:
            raise ArchiveError("%s unpacks to more than %d bytes: not a support bundle" % (archive, MAX_BYTES))
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        source = tar.extractfile(member)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with source:
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(source, out)


def bundle_root(folder):
    """The bundle inside an extracted archive: its one top folder, or the folder itself."""
    names = [n for n in os.listdir(folder) if not n.startswith(".")]
    if len(names) == 1 and os.path.isdir(os.path.join(folder, names[0])):
        return os.path.join(folder, names[0])
    return folder


@contextlib.contextmanager
def unpacked(path):
    """The folder to read for `path`: itself when it is not a file, else its archive extracted
    safely into a private temporary folder (removed on leaving)."""
    if not path or not os.path.isfile(path):
        yield path
        return
    scratch = tempfile.mkdtemp(prefix="gpu-bundle-")
    try:
        extract(path, scratch)
        yield bundle_root(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
