# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The board as a detached process: ensure it is running (or not), and serve.

Not module code: the lab_board role's own file, beside the launcher lab_board.py and the board
itself (board_server.py); the project's module_utils are imported as ansible.module_utils.<name>
(the launcher makes them so). ``run(argv, launcher, module_utils)`` is what lab_board.py calls:

- ``ensure --state present|absent --state-dir DIR --port N [...] [--dry-run]`` starts the board
  detached (its own session), with its pid, its settings and its log in a folder of its own
  outside the lab (files_dir: $XDG_RUNTIME_DIR or the temp folder, one per user and state
  folder - the board writes nothing in the lab); a board already running with the same settings is left alone
  (changed false); other settings restart it. ``absent`` stops it (TERM, then KILL after a
  bounded wait) and removes the pid file. A port in use is refused naming who holds it.
  ``--dry-run`` (check mode) says what it would do and does nothing.
- ``status --state-dir DIR``: whether this state folder's board runs, its pid and URL.
- ``serve ...``: the board itself, in the foreground, until TERM.

Every answer is one JSON line: {changed, running, pid, url, msg} or {failed: true, msg}.
"""

import argparse
import errno
import hashlib
import http.client
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

from ansible.module_utils.lab.wait import WaitTimeout, wait_until
from board_server import HOST, Board, BoardServer, Settings

PID_FILE = "board.pid"
INFO_FILE = "board.json"
LOG_FILE = "board.log"
POLL = 0.1   # seconds between two looks of a bounded wait
LOG_LIMIT = 1 << 20   # a log past this size starts afresh at the next start


def files_dir(state_dir, create=False):
    """The board's own folder for a state folder: pid, settings, log - never in the lab.
    ${LAB_BOARD_RUN_DIR:-${XDG_RUNTIME_DIR:-/tmp}}/gpu-incident-lab-board-<uid>-<sha1 of the
    state folder>; made 0700, refused when it is not a folder of this user's alone."""
    base = os.environ.get("LAB_BOARD_RUN_DIR") or os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    digest = hashlib.sha1(os.path.abspath(state_dir).encode()).hexdigest()[:12]
    path = os.path.join(base, "gpu-incident-lab-board-%d-%s" % (os.getuid(), digest))
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ControlError("%s is not a folder of this user's alone (a link, another owner or open to others): "
                           "the board keeps its pid there - remove it, or set LAB_BOARD_RUN_DIR" % path)
    return path


def legacy(state_dir, name):
    """Where a board of an earlier version kept its files: in the state folder itself."""
    return os.path.join(state_dir, name)


class ControlError(Exception):
    """Why the board could not be brought to the state asked, in plain words."""


def parser():
    top = argparse.ArgumentParser(prog="lab_board.py", description="The lab's read-only web board.")
    sub = top.add_subparsers(dest="command", required=True)
    for name in ("ensure", "serve", "status"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--state-dir", required=True)
        if name == "status":
            continue
        cmd.add_argument("--port", type=int, required=True)
        cmd.add_argument("--kubeconfig", default="")
        cmd.add_argument("--classroom-dir", default="")
        cmd.add_argument("--trainee", action="append", default=[])
        cmd.add_argument("--title", default="GPU incident lab")
        cmd.add_argument("--poll-seconds", type=float, default=2.0)
        cmd.add_argument("--resource", default="nvidia.com/gpu")
        if name == "ensure":
            cmd.add_argument("--state", choices=("present", "absent"), default="present")
            cmd.add_argument("--wait-seconds", type=float, default=20.0)
            cmd.add_argument("--dry-run", action="store_true")
    return top


def config_of(args):
    """The settings that make a running board the one asked for."""
    return {"port": args.port, "kubeconfig": args.kubeconfig or "", "classroom_dir": args.classroom_dir or "",
            "trainees": list(args.trainee), "title": args.title, "poll_seconds": args.poll_seconds,
            "resource": args.resource}


def serve_args(args):
    out = ["serve", "--state-dir", os.path.abspath(args.state_dir), "--port", str(args.port),
           "--kubeconfig", args.kubeconfig or "", "--classroom-dir", args.classroom_dir or "",
           "--title", args.title, "--poll-seconds", str(args.poll_seconds), "--resource", args.resource]
    for host in args.trainee:
        out += ["--trainee", host]
    return out


def settings_of(args):
    return Settings(args.state_dir, args.port, kubeconfig=args.kubeconfig, classroom_dir=args.classroom_dir,
                    trainees=args.trainee, title=args.title, poll_seconds=args.poll_seconds,
                    resource=args.resource)


# ------------------------------------------------------------------------------- processes
def process_of(pid, state_dir):
    """True when pid is a live board serving state_dir (not a pid reused by something else)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            argv = [a.decode("utf-8", "replace") for a in handle.read().split(b"\0")]
        with open("/proc/%d/stat" % pid) as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state in ("Z", "X") or "serve" not in argv:
        return False
    return any(argv[i] == "--state-dir" and argv[i + 1] == state_dir for i in range(len(argv) - 1))


def running(state_dir):
    """(pid, info) of this state folder's board, or (None, info-or-None) when none runs."""
    found = (None, None)
    for folder in (files_dir(state_dir), state_dir):
        info = None
        try:
            with open(os.path.join(folder, INFO_FILE), encoding="utf-8") as handle:
                info = json.load(handle)
        except (OSError, ValueError):
            pass
        try:
            with open(os.path.join(folder, PID_FILE), encoding="utf-8") as handle:
                pid = int(handle.read().strip())
        except (OSError, ValueError):
            found = found if found[1] is not None else (None, info)
            continue
        if process_of(pid, state_dir):
            return pid, info
        found = (None, info)
    # no pid file names it (another XDG_RUNTIME_DIR than the one it was started with, a file
    # removed by hand): the process itself, by its command line
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid() and process_of(int(entry), state_dir):
            return int(entry), found[1]
    return found


def healthz(port, timeout=1.0):
    """What the board on 127.0.0.1:port says about itself, or None."""
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        connection.request("GET", "/healthz")
        answer = connection.getresponse()
        if answer.status != 200:
            return None
        return json.loads(answer.read().decode("utf-8"))
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        connection.close()


def port_problem(port):
    """None when 127.0.0.1:port can be listened on, else who holds it, in words."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # as the server binds: a port whose last connections wait in TIME_WAIT is free, a listener is not
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind((HOST, port))
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            return "port %d on %s cannot be used: %s" % (port, HOST, exc.strerror or exc)
        who = healthz(port)
        holder = ("the board of %s (pid %s)" % (who.get("board"), who.get("pid"))
                  if isinstance(who, dict) and who.get("board") else "another program")
        return ("port %d on %s is in use by %s; give the board another port: -e lab_board_port=PORT"
                % (port, HOST, holder))
    finally:
        probe.close()
    return None


def write_atomic(path, text):
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def wait_for(what, check, seconds):
    """check() until it returns a true value, for at most `seconds` (lab/wait.py); ControlError
    names what."""
    def look(_left):
        value = check()
        return bool(value), value

    try:
        return wait_until(what, look, seconds, interval=POLL)[0]
    except WaitTimeout:
        raise ControlError("waited %.0f s for %s" % (seconds, what))


def log_tail(state_dir, lines=5):
    try:
        with open(os.path.join(files_dir(state_dir), LOG_FILE), encoding="utf-8", errors="replace") as handle:
            return " / ".join(handle.read().strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop(pid, state_dir, seconds=10.0):
    """TERM, a bounded wait for the exit, KILL when it did not go."""
    try:
        os.kill(pid, signal.SIGTERM)
        wait_for("board pid %d to exit after TERM" % pid, lambda: not process_of(pid, state_dir), seconds)
    except ProcessLookupError:
        pass
    except ControlError:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wait_for("board pid %d to exit after KILL" % pid, lambda: not process_of(pid, state_dir), seconds)


def pid_files(state_dir):
    """The pid and settings files of this state folder's board that exist (its own folder's, and
    an earlier version's in the state folder)."""
    here = [os.path.join(files_dir(state_dir), n) for n in (PID_FILE, INFO_FILE)]
    return [p for p in here + [legacy(state_dir, n) for n in (PID_FILE, INFO_FILE)] if os.path.exists(p)]


def remove_files(state_dir):
    removed = False
    for path in pid_files(state_dir):
        try:
            os.unlink(path)
            removed = True
        except FileNotFoundError:
            pass
    return removed


def start(args, launcher, module_utils, state_dir):
    problem = port_problem(args.port)
    if problem:
        raise ControlError(problem)
    own = files_dir(state_dir, create=True)
    log_path = os.path.join(own, LOG_FILE)
    command = [sys.executable, launcher, "--module-utils", module_utils] + serve_args(args)
    too_big = os.path.exists(log_path) and os.path.getsize(log_path) > LOG_LIMIT
    with open(log_path, "wb" if too_big else "ab") as log:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 cwd="/", start_new_session=True, close_fds=True)

    def answers():
        if child.poll() is not None:
            raise ControlError("the board exited (%s) before it answered: %s" % (child.returncode, log_tail(state_dir)))
        who = healthz(args.port, timeout=0.5)
        return isinstance(who, dict) and who.get("pid") == child.pid

    try:
        wait_for("the board to answer on http://%s:%d/healthz" % (HOST, args.port), answers, args.wait_seconds)
    except ControlError:
        if child.poll() is None:
            child.kill()
        raise
    write_atomic(os.path.join(own, PID_FILE), "%d\n" % child.pid)
    write_atomic(os.path.join(own, INFO_FILE), json.dumps(
        {"pid": child.pid, "url": "http://%s:%d/" % (HOST, args.port), "config": config_of(args)}, indent=1) + "\n")
    return child.pid


def ensure(args, launcher, module_utils):
    state_dir = os.path.abspath(args.state_dir)
    url = "http://%s:%d/" % (HOST, args.port)
    pid, info = running(state_dir)
    if args.state == "absent":
        if pid is None:
            stale = bool(pid_files(state_dir))
            if stale and not args.dry_run:
                remove_files(state_dir)
            return {"changed": stale, "running": False, "pid": None, "url": None,
                    "msg": "the board was not running%s" % ("; its stale pid file removed" if stale else "")}
        if not args.dry_run:
            stop(pid, state_dir)
            remove_files(state_dir)
        return {"changed": True, "running": False, "pid": None, "url": None,
                "msg": "%s the board (pid %s)" % ("would stop" if args.dry_run else "stopped", pid)}
    same = pid is not None and (info or {}).get("config") == config_of(args)
    if same:
        who = healthz(args.port)
        if isinstance(who, dict) and who.get("pid") == pid:
            return {"changed": False, "running": True, "pid": pid, "url": url, "files": files_dir(state_dir),
                    "msg": "the board is running (pid %s): %s" % (pid, url)}
    verb = "restart" if pid is not None else "start"
    if args.dry_run:
        return {"changed": True, "running": pid is not None, "pid": pid, "url": url,
                "msg": "would %s the board on %s" % (verb, url)}
    if pid is not None:
        stop(pid, state_dir)
    new = start(args, launcher, module_utils, state_dir)
    return {"changed": True, "running": True, "pid": new, "url": url, "files": files_dir(state_dir),
            "msg": "%s the board (pid %s): %s" % ("restarted" if pid else "started", new, url)}


def serve(args, out):
    """The board in the foreground until TERM or INT; 2 when the port cannot be had."""
    board = Board(settings_of(args))

    def log(line):
        out.write("%s board: %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"), line))
        out.flush()

    try:
        server = BoardServer(board, log)
    except OSError as exc:
        log("cannot listen on %s:%d: %s" % (HOST, args.port, exc.strerror or exc))
        return 2

    def shut(_signum, _frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shut)
    signal.signal(signal.SIGINT, shut)
    log("serving %s (read-only) for %s" % (board.settings.url, board.settings.state_dir))
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
    log("stopped")
    return 0


def run(argv, launcher, module_utils, out):
    """(exit code, answer dict or None): what the launcher prints and exits with."""
    args = parser().parse_args(argv)
    if args.command == "serve":
        return serve(args, out), None
    try:
        if args.command == "status":
            state_dir = os.path.abspath(args.state_dir)
            pid, info = running(state_dir)
            return 0, {"changed": False, "running": pid is not None, "pid": pid,
                       "url": (info or {}).get("url") if pid else None, "files": files_dir(state_dir)}
        if not 1 <= args.port <= 65535:
            raise ControlError("port %d is not a TCP port (1-65535)" % args.port)
        return 0, ensure(args, launcher, module_utils)
    except (ControlError, OSError) as exc:
        return 1, {"failed": True, "changed": False, "msg": str(exc)}
