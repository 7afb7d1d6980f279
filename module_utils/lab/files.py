# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a small text file from an Ansible module: check mode, --diff, backup.

A lab report is evidence; a changed report must never replace the old one
silently. With ``backup`` the previous content is kept beside it (Ansible's
usual ``file.<timestamp>~`` backup) and its path returned; with ``force``
false an existing file is left as it is, whatever it holds.

Every refusal is a LabFileError (a LabError) naming the file and the fix; nothing is written
before it is raised. The module turns it into ``fail_json``.
"""

import os
import re
import tempfile

from ansible.module_utils.lab.refusals import LabError


# the argument spec of the lab_files doc fragment: where a module writes its report
REPORT_ARGS = dict(
    dest=dict(type="path"),
    backup=dict(type="bool", default=False),
    mode=dict(type="str", default="0644"),
)


class LabFileError(LabError):
    """A file or folder that cannot be read or written, or a mode that is not a file mode."""


def parse_mode(mode, option="mode"):
    """A file mode given as octal text ("0644", "644", "0o644") or a number: 0 to 0777.

    Special bits (setuid, setgid, sticky: 07000) are refused - no lab file or report needs
    them, and "77777" is a typo, not a wish. Raised before anything is written.
    """
    if isinstance(mode, bool):
        mode = None
    if isinstance(mode, int):
        value = mode
    elif isinstance(mode, str) and re.fullmatch(r"(0o|0)?[0-7]{1,5}", mode.strip()):
        text = mode.strip()
        value = int(text[2:] if text.startswith("0o") else text, 8)
    else:
        raise LabFileError("%s %r is not an octal file mode; write it as a quoted octal string "
                           "such as \"0644\" (files) or \"0755\" (scripts, folders)"
                           % (option, mode))
    if not 0 <= value <= 0o777:
        raise LabFileError("%s %s asks for bits beyond 0777 (setuid/setgid/sticky or more than "
                           "four octal digits); nothing was written. Use at most 0777, e.g. "
                           "\"0644\"" % (option, mode))
    return value


def read_text(path, what="file"):
    """Read a UTF-8 text file, or refuse naming it, with the reason and the byte that broke."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except IsADirectoryError:
        raise LabFileError("%s %s is a folder; give the path of a file" % (what, path))
    except OSError as exc:
        raise LabFileError("cannot read %s %s: %s" % (what, path, exc.strerror or exc))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise LabFileError("%s %s is not UTF-8 text: byte 0x%02x at line %d (offset %d); save "
                           "it as UTF-8" % (what, path, data[exc.start], line, exc.start))


def write_text(module, dest, content, mode="0644", backup=False, force=True, parents=True,
               dir_mode="0755", raise_errors=False):
    """Returns a dict with changed, diff, backup_file, dest (and created_dirs with parents).

    ``module`` is the Ansible side: its check mode and --diff, ``backup_local`` and
    ``atomic_move``. With ``raise_errors`` a refusal raises LabFileError. Without it (only for
    the transition of callers that do not catch LabError yet) the refusal fails the module.
    """
    if not raise_errors:
        try:
            return write_text(module, dest, content, mode, backup, force, parents, dir_mode, True)
        except LabFileError as exc:
            module.fail_json(msg=str(exc))
    wanted_mode = parse_mode(mode)
    result = {"changed": False, "dest": dest}
    before = None
    if os.path.exists(dest):
        if os.path.isdir(dest):
            raise LabFileError("%s is a directory; dest must be a file path" % dest)
        with open(dest, "r", encoding="utf-8", errors="replace") as handle:
            before = handle.read()
        if not force:
            result["kept_existing"] = True
            return result
    mode_ok = before is not None and (os.stat(dest).st_mode & 0o7777) == wanted_mode
    if before == content and mode_ok:
        return result
    result["changed"] = True
    if module._diff:
        result["diff"] = {"before": before or "", "after": content,
                          "before_header": dest if before is not None else "/dev/null",
                          "after_header": dest}
    if module.check_mode:
        return result
    folder = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(folder):
        if not parents:
            raise LabFileError("folder %s of dest does not exist; create it first" % folder)
        result["created_dirs"] = make_dirs(folder, dir_mode)
    try:
        if backup and before is not None and before != content:
            result["backup_file"] = module.backup_local(dest)
        if before != content:
            replace_file(module, dest, content)
        os.chmod(dest, wanted_mode)
    except OSError as exc:
        raise LabFileError("cannot write %s: %s" % (dest, exc.strerror or exc))
    return result


def replace_file(module, dest, content):
    """Write ``content`` to a temporary file beside ``dest`` and move it into place whole
    (``module.atomic_move``: a new file gets the umask's mode, an existing one keeps its own).
    OSError as it comes; the folder must exist."""
    handle, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(dest)),
                                   prefix=".%s." % os.path.basename(dest))
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(content)
    module.atomic_move(tmp, dest)


def make_dirs(folder, dir_mode="0755"):
    """mkdir -p with the given mode on each folder created; the list of those folders."""
    created, path = [], os.path.abspath(folder)
    while not os.path.isdir(path):
        if os.path.exists(path):
            raise LabFileError("%s exists and is not a folder" % path)
        created.insert(0, path)
        path = os.path.dirname(path)
    mode = parse_mode(dir_mode, "dir_mode")
    for path in created:
        try:
            os.mkdir(path)
            os.chmod(path, mode)
        except OSError as exc:
            raise LabFileError("cannot create folder %s: %s; choose a dest whose folder can be "
                               "created" % (path, exc.strerror or exc))
    return created


def write_files(module, files, dirs=(), dir_mode="0755"):
    """text_files: write each of ``files`` (dicts: path, content, mode, backup, force) and create
    ``dirs``, every mode checked before anything is written. The module's result."""
    parse_mode(dir_mode, "dir_mode")
    for entry in files:   # every mode is checked before anything is written
        parse_mode(entry["mode"], "%s: mode" % entry["path"])
    created, results, diffs = [], [], []
    for folder in dirs:
        if not os.path.isdir(folder):
            if module.check_mode:
                created.append(folder)
            else:
                created.extend(make_dirs(folder, dir_mode))
    for entry in files:
        one = write_text(module, entry["path"], entry["content"], mode=entry["mode"],
                         backup=entry["backup"], force=entry["force"], parents=True,
                         dir_mode=dir_mode, raise_errors=True)
        created.extend(one.pop("created_dirs", []))
        if "diff" in one:
            diffs.append(one.pop("diff"))
        one["path"] = one.pop("dest")
        results.append(one)
    result = dict(changed=bool(created) or any(r["changed"] for r in results), files=results,
                  changed_files=[r["path"] for r in results if r["changed"]], created_dirs=created)
    if diffs:
        result["diff"] = diffs
    return result
