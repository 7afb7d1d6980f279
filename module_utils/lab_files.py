# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a small text file from an Ansible module: check mode, --diff, backup.

A lab report is evidence; a changed report must never replace the old one
silently. With ``backup`` the previous content is kept beside it (Ansible's
usual ``file.<timestamp>~`` backup) and its path returned; with ``force``
false an existing file is left as it is, whatever it holds.
"""

import os
import re
import tempfile


def parse_mode(module, mode, option="mode"):
    """A file mode given as octal text ("0644", "644", "0o644") or a number: 0 to 0777.

    Special bits (setuid, setgid, sticky: 07000) are refused - no lab file or report needs
    them, and "77777" is a typo, not a wish. Fails the module before anything is written.
    """
    if isinstance(mode, bool):
        mode = None
    if isinstance(mode, int):
        value = mode
    elif isinstance(mode, str) and re.fullmatch(r"(0o|0)?[0-7]{1,5}", mode.strip()):
        text = mode.strip()
        value = int(text[2:] if text.startswith("0o") else text, 8)
    else:
        module.fail_json(msg="%s %r is not an octal file mode; write it as a quoted octal string "
                             "such as \"0644\" (files) or \"0755\" (scripts, folders)"
                             % (option, mode))
    if not 0 <= value <= 0o777:
        module.fail_json(msg="%s %s asks for bits beyond 0777 (setuid/setgid/sticky or more than "
                             "four octal digits); nothing was written. Use at most 0777, e.g. "
                             "\"0644\"" % (option, mode))
    return value


def read_text(module, path, what="file"):
    """Read a UTF-8 text file or fail naming it, with the reason and the byte that broke."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except IsADirectoryError:
        module.fail_json(msg="%s %s is a folder; give the path of a file" % (what, path))
    except OSError as exc:
        module.fail_json(msg="cannot read %s %s: %s" % (what, path, exc.strerror or exc))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        module.fail_json(msg="%s %s is not UTF-8 text: byte 0x%02x at line %d (offset %d); save "
                             "it as UTF-8" % (what, path, data[exc.start], line, exc.start))


def write_text(module, dest, content, mode="0644", backup=False, force=True, parents=True,
               dir_mode="0755"):
    """Returns a dict with changed, diff, backup_file, dest (and created_dirs with parents)."""
    wanted_mode = parse_mode(module, mode)
    result = {"changed": False, "dest": dest}
    before = None
    if os.path.exists(dest):
        if os.path.isdir(dest):
            module.fail_json(msg="%s is a directory; dest must be a file path" % dest)
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
            module.fail_json(msg="folder %s of dest does not exist; create it first" % folder)
        result["created_dirs"] = make_dirs(module, folder, dir_mode)
    try:
        if backup and before is not None and before != content:
            result["backup_file"] = module.backup_local(dest)
        if before != content:
            handle, tmp = tempfile.mkstemp(dir=folder, prefix=".%s." % os.path.basename(dest))
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(content)
            module.atomic_move(tmp, dest)
        os.chmod(dest, wanted_mode)
    except OSError as exc:
        module.fail_json(msg="cannot write %s: %s" % (dest, exc.strerror or exc))
    return result


def make_dirs(module, folder, dir_mode="0755"):
    """mkdir -p with the given mode on each folder created; the list of those folders."""
    created, path = [], os.path.abspath(folder)
    while not os.path.isdir(path):
        if os.path.exists(path):
            module.fail_json(msg="%s exists and is not a folder" % path)
        created.insert(0, path)
        path = os.path.dirname(path)
    mode = parse_mode(module, dir_mode, "dir_mode")
    for path in created:
        try:
            os.mkdir(path)
            os.chmod(path, mode)
        except OSError as exc:
            module.fail_json(msg="cannot create folder %s: %s; choose a dest whose folder can be "
                                 "created" % (path, exc.strerror or exc))
    return created
