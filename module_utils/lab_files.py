# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a small text file from an Ansible module: check mode, --diff, backup.

A lab report is evidence; a changed report must never replace the old one
silently. With ``backup`` the previous content is kept beside it (Ansible's
usual ``file.<timestamp>~`` backup) and its path returned; with ``force``
false an existing file is left as it is, whatever it holds.
"""

import os
import tempfile


def write_text(module, dest, content, mode="0644", backup=False, force=True, parents=True,
               dir_mode="0755"):
    """Returns a dict with changed, diff, backup_file, dest (and created_dirs with parents)."""
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
    wanted_mode = int(mode, 8) if isinstance(mode, str) else mode
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
    if backup and before is not None and before != content:
        result["backup_file"] = module.backup_local(dest)
    if before != content:
        handle, tmp = tempfile.mkstemp(dir=folder, prefix=".%s." % os.path.basename(dest))
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(content)
        module.atomic_move(tmp, dest)
    os.chmod(dest, wanted_mode)
    return result


def make_dirs(module, folder, dir_mode="0755"):
    """mkdir -p with the given mode on each folder created; the list of those folders."""
    created, path = [], os.path.abspath(folder)
    while not os.path.isdir(path):
        if os.path.exists(path):
            module.fail_json(msg="%s exists and is not a folder" % path)
        created.insert(0, path)
        path = os.path.dirname(path)
    mode = int(dir_mode, 8) if isinstance(dir_mode, str) else dir_mode
    for path in created:
        os.mkdir(path)
        os.chmod(path, mode)
    return created
