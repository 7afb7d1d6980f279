#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's board: start, stop or serve it (board_control.py beside it says how; board_server.py
is the board itself - what it reads and its HTTP server).

    lab_board.py --module-utils DIR ensure --state present --state-dir DIR --port 8787 [...]
    lab_board.py --module-utils DIR status --state-dir DIR

DIR of --module-utils is the project's module_utils/: the board renders its page with report/
and reads the cluster with kube/, imported as Ansible's modules import them
(ansible.module_utils.<name>). Prints one JSON line (the answer) and exits 0, or 1 with
{"failed": true, "msg": ...}.
"""
import json
import os
import sys


def main(argv):
    if len(argv) < 2 or argv[0] != "--module-utils":
        sys.stderr.write("usage: lab_board.py --module-utils DIR ensure|status|serve ...\n")
        return 2
    module_utils = os.path.abspath(argv[1])
    import ansible.module_utils
    ansible.module_utils.__path__.append(module_utils)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # board_control, board_server
    from board_control import run
    code, answer = run(argv[2:], os.path.abspath(__file__), module_utils, sys.stdout)
    if answer is not None:
        sys.stdout.write(json.dumps(answer) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
