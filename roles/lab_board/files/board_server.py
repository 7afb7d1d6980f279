# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The live board: what it reads, and the read-only HTTP server on 127.0.0.1.

Not module code: the lab_board role's own file, run by board_control.py (started by lab_board.py)
with the project's module_utils importable as ansible.module_utils.<name> - the page is rendered
by module_utils/report/render.py (as gpu_diagnose's page is), the nodes read with kube/client.py.

What it reads, each time a page asks (at most once a second, whatever the number of pages):
the lab's state folder - grade-report.json (playbooks/grade.yml), drill.json (playbooks/drill.yml),
diagnosis.json (playbooks/diagnose.yml), node-facts.json - the cluster's nodes (one GET
/api/v1/nodes with the lab's kubeconfig), then the GPUs beyond node status (board_gpus.py: the
ResourceSlices, the DRA kubelet plugin's and NVIDIA's toolkit installer's Pods by label, the
ResourceClaims when a node does DRA - a GET each), and with a classroom the class-report.xml that
playbooks/classroom-grade.yml writes. It writes nothing anywhere.

What it serves: ``/`` (the page), ``/state`` (the page's changing part as JSON: the script
swaps it in when its version differs), ``/board.js`` and ``/healthz`` (who is serving, for
the start to know it is this board). Nothing else - no file of the state folder, no
kubeconfig: a request for anything else is a 404, a method other than GET/HEAD a 405, and a
Host header that is not a loopback name a 403 (no DNS rebinding).
"""

import datetime
import hashlib
import json
import os
import threading

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.etree import ElementTree

import board_gpus   # roles/lab_board/files/board_gpus.py: DRA devices and claims, the toolkit installer

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.report.render import (
    ReportError, board_body, board_page, board_script, picture_model)

HOST = "127.0.0.1"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")
STEP_KEYS = [str(n) for n in range(1, 9)]
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
NODE_ROWS = 100   # nodes shown; a bigger cluster says how many more there are


def clock(mtime):
    """A file's time as people read it on a board: local time, seconds."""
    return datetime.datetime.fromtimestamp(mtime).strftime("%Y-%m-%d %H:%M:%S")


def read_json(path):
    """(data, mtime, problem): data None when the file is absent or unreadable."""
    try:
        mtime = os.stat(path).st_mtime
        with open(path, encoding="utf-8") as handle:
            return json.load(handle), mtime, None
    except FileNotFoundError:
        return None, None, None
    except (OSError, ValueError) as exc:
        return None, None, "%s cannot be read: %s" % (path, getattr(exc, "strerror", None) or exc)


SENTINEL_TYPES = ("RuntimeBreaksOnRestart", "RuntimeRestartPending")


def sentinel_of(status):
    """The sentinel's conditions of a Node's status (issue 39): {type: {status, message}} of those
    it carries ({} where no sentinel posted any)."""
    out = {}
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") in SENTINEL_TYPES:
            out[cond["type"]] = {"status": cond.get("status") or "Unknown", "message": cond.get("message") or ""}
    return out


def step_label(key):
    return ("Step %s" % key) if str(key).isdigit() else str(key).capitalize()


class Settings(object):
    """What the board shows: the state folder, the cluster, the classroom."""

    def __init__(self, state_dir, port, kubeconfig=None, classroom_dir=None, trainees=(),
                 title="GPU incident lab", poll_seconds=2.0, resource="nvidia.com/gpu",
                 grade_report=None, drill_file=None, diagnosis_file=None, facts_file=None):
        self.state_dir = os.path.abspath(state_dir)
        self.port = int(port)
        self.kubeconfig = kubeconfig or None
        self.classroom_dir = classroom_dir or None
        self.trainees = list(trainees or [])
        self.title = title
        self.poll_seconds = float(poll_seconds)
        self.resource = resource
        self.grade_report = grade_report or os.path.join(self.state_dir, "grade-report.json")
        self.drill_file = drill_file or os.path.join(self.state_dir, "drill.json")
        self.diagnosis_file = diagnosis_file or os.path.join(self.state_dir, "diagnosis.json")
        self.facts_file = facts_file or os.path.join(self.state_dir, "node-facts.json")

    @property
    def url(self):
        return "http://%s:%d/" % (HOST, self.port)

    @property
    def cluster(self):
        """The cluster's name as its kubeconfig's folder says (kwok: clusters/<name>/)."""
        return os.path.basename(os.path.dirname(self.kubeconfig)) if self.kubeconfig else None


class History(object):
    """What this board has seen graded, so a step that passed and then failed says so, and a
    step the latest run did not grade keeps its earlier result."""

    def __init__(self):
        self.seen = {}

    def note(self, key, state, when, reasons=()):
        """Note the state of key graded at when; whether it failed after a PASS this board saw."""
        before = self.seen.get(key)
        if before and before["when"] == when and before["state"] == state:
            return before["regressed"]
        regressed = state == "FAIL" and bool(before) and (before["state"] == "PASS" or before["regressed"])
        self.seen[key] = {"state": state, "when": when, "regressed": regressed, "reasons": list(reasons)}
        return regressed

    def earlier(self, key):
        return self.seen.get(key)


class Board(object):
    """Reads the lab for the page (``context``) and renders it (``state``)."""

    def __init__(self, settings):
        self.settings = settings
        self._kube = None
        self._lock = threading.Lock()
        self._cached = None
        self._cached_at = 0.0
        self.steps = History()
        self.classroom = History()

    # ------------------------------------------------------------------ reads
    def grade(self):
        s = self.settings
        data, mtime, problem = read_json(s.grade_report)
        out = {"path": s.grade_report, "graded_at": clock(mtime) if mtime else None,
               "problem": problem, "lab_root": None, "rows": []}
        steps = {}
        if isinstance(data, dict) and isinstance(data.get("steps"), dict):
            steps = {str(k): v for k, v in data["steps"].items() if isinstance(v, dict)}
            out["lab_root"] = data.get("lab_root")
        elif data is not None:
            out["problem"] = "%s is not a grade report (no steps)" % s.grade_report
        keys = STEP_KEYS + sorted(k for k in steps if k not in STEP_KEYS)
        for key in keys:
            res = steps.get(key)
            row = {"key": key, "label": step_label(key), "reasons": [], "regressed": False,
                   "earlier": False, "when": ""}
            if res is not None:
                row["state"] = "PASS" if res.get("passed") is True else "FAIL"
                row["reasons"] = [str(r) for r in res.get("reasons") or []][:6]
                row["when"] = out["graded_at"]
                row["regressed"] = self.steps.note(key, row["state"], row["when"], row["reasons"])
            else:
                before = self.steps.earlier(key)
                if before:
                    row.update(state=before["state"], when=before["when"], earlier=True,
                               reasons=before["reasons"])
                elif key not in STEP_KEYS:
                    continue
                else:
                    row["state"] = "not-graded"
            out["rows"].append(row)
        return out

    def drill(self):
        s = self.settings
        data, mtime, problem = read_json(s.drill_file)
        out = {"name": None, "since": clock(mtime) if mtime else None, "problem": problem}
        if isinstance(data, dict):
            out.update(name=data.get("drill") or None, node=data.get("node") or "?",
                       pod=data.get("pod") or "?")
        return out

    def diagnosis(self):
        s = self.settings
        data, mtime, problem = read_json(s.diagnosis_file)
        out = {"path": s.diagnosis_file, "when": clock(mtime) if mtime else None,
               "problem": problem, "d": None}
        if data is not None:
            try:
                out["d"] = picture_model(data)
            except ReportError as exc:
                out["problem"] = "%s: %s" % (s.diagnosis_file, exc)
        return out

    def facts(self):
        data, _mtime, _problem = read_json(self.settings.facts_file)
        return data if isinstance(data, dict) else {}

    def kube(self):
        if self._kube is None and self.settings.kubeconfig:
            from ansible.module_utils.kube.client import Kube
            self._kube = Kube(self.settings.kubeconfig, timeout=5)
        return self._kube

    def nodes(self):
        s = self.settings
        facts = self.facts()
        out = {"rows": [], "problem": None, "more": None, "facts_name": os.path.basename(s.facts_file), "labels": {}}
        if not s.kubeconfig:
            out["problem"] = "no kubeconfig given: the cluster's nodes are not shown"
            return out
        if not os.path.exists(s.kubeconfig):
            out["problem"] = ("the cluster is not there (no %s): bring it up with "
                              "ansible-playbook lab.yml" % s.kubeconfig)
            return out
        try:
            # one page each poll (the API lists by name): a fleet of thousands costs one small GET
            page = self.kube().get("/api/v1/nodes", params={"limit": NODE_ROWS}) or {}
            items = page.get("items") or []
            left = (page.get("metadata") or {}).get("remainingItemCount")
            out["more"] = left if left else (None if not (page.get("metadata") or {}).get("continue") else "more")
        # any failure is shown on the page, and the board goes on
        except Exception as exc:  # pylint: disable=broad-except
            self._kube = None
            out["problem"] = "the cluster does not answer: %s" % exc
            return out
        for node in sorted(items, key=lambda n: n["metadata"]["name"]):
            meta, status = node["metadata"], node.get("status") or {}
            ready = next((c.get("status") for c in status.get("conditions") or []
                          if c.get("type") == "Ready"), "Unknown")
            fake = (meta.get("annotations") or {}).get(KWOK_ANNOTATION) == "fake"
            taints = (node.get("spec") or {}).get("taints") or []
            mine = facts.get(meta["name"]) if isinstance(facts.get(meta["name"]), dict) else None
            out["labels"][meta["name"]] = meta.get("labels") or {}
            out["rows"].append({
                "name": meta["name"], "kind": "kwok" if fake else "real", "ready": ready,
                "capacity": (status.get("capacity") or {}).get(s.resource, "-"),
                "allocatable": (status.get("allocatable") or {}).get(s.resource, "-"),
                "taints": ", ".join("%s=%s:%s" % (t.get("key"), t.get("value", ""), t.get("effect"))
                                    for t in taints) or "-",
                "facts": self._facts_text(mine), "sentinel": sentinel_of(status)})
        return out

    def gpus(self, nodes):
        """The GPUs beyond node status (board_gpus.py): the DRA nodes' devices and claims, NVIDIA's
        toolkit installer Pods. Read only when the nodes were: a cluster that does not answer is
        said once, by the nodes."""
        empty = {"dra": {"nodes": [], "note": None, "problem": None},
                 "toolkit": {"rows": [], "problem": None, "selector": board_gpus.TOOLKIT_SELECTOR}}
        if nodes["problem"] or self.kube() is None:
            return empty
        try:
            return board_gpus.read(self.kube(), nodes["labels"])
        # any failure is shown on the page, and the board goes on
        except Exception as exc:  # pylint: disable=broad-except
            self._kube = None
            empty["dra"]["problem"] = "the GPUs by ResourceClaim and the toolkit installer were not read: %s" % (
                exc if isinstance(exc, LabError) else "the API server answered with objects the board cannot read")
            return empty

    @staticmethod
    def _facts_text(mine):
        if not mine:
            return "-"
        parts = []
        if "driver_ok" in mine:
            parts.append("driver %s" % ("ok " + str(mine.get("driver_version") or "")
                                        if mine["driver_ok"] else "FAILS"))
        running = mine.get("runtimes_running", mine.get("runtimes_loaded"))
        if running is not None:
            parts.append("runtimes %s" % ",".join(map(str, running)))
        if mine.get("restart_pending"):
            parts.append("restart pending")
        if "device_plugin_socket" in mine:
            parts.append("plugin socket %s" % ("yes" if mine["device_plugin_socket"] else "no"))
        return "; ".join(p.strip() for p in parts) or "-"

    def classroom_view(self):
        s = self.settings
        if not s.classroom_dir:
            return None
        path = os.path.join(s.classroom_dir, "class-report.xml")
        out = {"path": path, "graded_at": None, "problem": None, "columns": [], "hosts": []}
        suites = {}
        try:
            mtime = os.stat(path).st_mtime
            root = ElementTree.parse(path).getroot()
            out["graded_at"] = clock(mtime)
            suites = {t.get("name"): t for t in root.iter("testsuite")}
        except FileNotFoundError:
            pass
        except (OSError, ElementTree.ParseError) as exc:
            out["problem"] = "%s cannot be read: %s" % (path, getattr(exc, "strerror", None) or exc)
        hosts, columns = {}, set()
        for name, suite in suites.items():
            prop = suite.find("properties/property[@name='lab']")
            lab = prop.get("value") if prop is not None else "?"
            cases = suite.findall("testcase")
            error = next((c.find("error") for c in cases if c.find("error") is not None), None)
            entry = {"name": name, "lab": lab, "cells": {}, "reason": None}
            if error is not None:
                message = error.get("message") or ""
                entry["status"] = "unreachable" if "unreachable" in message else "failed"
                entry["reason"] = (error.text or "").strip() or message
            else:
                entry["status"] = "graded"
                for case in cases:
                    step = (case.get("name") or "").replace("step ", "")
                    failure = case.find("failure")
                    columns.add(step)
                    entry["cells"][step] = {
                        "state": "FAIL" if failure is not None else "PASS",
                        "reason": failure.get("message") if failure is not None else None}
            hosts[name] = entry
        for name in s.trainees:
            hosts.setdefault(name, {"name": name, "lab": "?", "cells": {}, "status": "not-graded",
                                    "reason": "not in the last class grade"})
        order = sorted(columns, key=lambda k: (0, int(k), "") if k.isdigit() else (1, 0, k))
        out["columns"] = [{"key": k, "label": step_label(k)} for k in order]
        labels = {"unreachable": "unreachable", "failed": "could not be graded",
                  "not-graded": "not graded yet"}
        for name in sorted(hosts):
            entry = hosts[name]
            cells, passed = [], 0
            for key in order:
                cell = entry["cells"].get(key)
                if cell is None:
                    cells.append({"step": key, "state": "not-graded", "reason": None, "regressed": False})
                    continue
                passed += cell["state"] == "PASS"
                regressed = self.classroom.note((name, key), cell["state"], out["graded_at"])
                cells.append(dict(cell, step=key, regressed=regressed))
            out["hosts"].append({
                "name": name, "lab": entry["lab"], "status": entry["status"],
                "status_label": labels.get(entry["status"], entry["status"]),
                "reason": entry["reason"], "kwok_only": "kwok-only" in str(entry["lab"]),
                # the lab asked for a real node, the host had no root: classroom_trainee's fallback
                "fallback": "no root" in str(entry["lab"]),
                "cells": cells, "passed": "%d of %d" % (passed, len(entry["cells"]))})
        return out

    # ------------------------------------------------------------------ render
    def context(self):
        nodes = self.nodes()
        gpus = self.gpus(nodes)
        return {"grade": self.grade(), "drill": self.drill(), "diagnosis": self.diagnosis(),
                "nodes": nodes, "dra": gpus["dra"], "toolkit": gpus["toolkit"],
                "classroom": self.classroom_view(), "resource": self.settings.resource}

    def state(self, max_age=1.0):
        """{version, html, read_at}: the page's changing part, read at most once per max_age."""
        import time
        with self._lock:
            now = time.monotonic()
            if self._cached is None or now - self._cached_at >= max_age:
                html = board_body(self.context())
                self._cached = {"version": hashlib.sha256(html.encode("utf-8")).hexdigest()[:16],
                                "html": html,
                                "read_at": datetime.datetime.now().strftime("%H:%M:%S")}
                self._cached_at = now
            return dict(self._cached)

    def page(self):
        state = self.state()
        s = self.settings
        return board_page(state["html"], state["version"], s.title, s.state_dir, s.cluster,
                          s.poll_seconds)


class Handler(BaseHTTPRequestHandler):
    """GET/HEAD of the four paths the board serves; everything else refused."""

    server_version = "gpu-incident-lab-board"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    SECURITY = {"Content-Security-Policy": "default-src 'none'; script-src 'self'; connect-src 'self'; "
                                           "style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; "
                                           "form-action 'none'; frame-ancestors 'none'",
                "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                "Cache-Control": "no-store", "X-Frame-Options": "DENY"}

    def log_request(self, code="-", size="-"):
        """Only refusals and errors go to the log: the page asks for /state every few seconds."""
        if str(code).isdigit() and int(code) >= 400:
            BaseHTTPRequestHandler.log_request(self, code, size)

    # the base class's signature
    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        self.server.log("%s %s" % (self.address_string(), format % args))

    def _send(self, status, body, content_type="text/plain; charset=utf-8", head=False):
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in self.SECURITY.items():
            self.send_header(key, value)
        if status == 405:
            self.send_header("Allow", "GET, HEAD")
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _host_ok(self):
        host = (self.headers.get("Host") or "").strip().lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name in LOOPBACK_NAMES

    def _route(self, head=False):
        if not self._host_ok():
            return self._send(403, "the board answers only to a loopback name (127.0.0.1, localhost)\n",
                              head=head)
        path = self.path.split("?", 1)[0]
        board = self.server.board
        try:
            if path == "/":
                return self._send(200, board.page(), "text/html; charset=utf-8", head)
            if path == "/state":
                return self._send(200, json.dumps(board.state()), "application/json", head)
            if path == "/board.js":
                return self._send(200, board_script(), "text/javascript; charset=utf-8", head)
            if path == "/healthz":
                return self._send(200, json.dumps({"board": board.settings.state_dir, "pid": os.getpid(),
                                                   "url": board.settings.url}), "application/json", head)
        except ReportError as exc:
            return self._send(500, "the board cannot render: %s\n" % exc, head=head)
        return self._send(404, "not on this board: it serves only what it renders (/, /state)\n",
                          head=head)

    def do_GET(self):  # noqa: N802 - the base class's name
        self._route()

    def do_HEAD(self):  # noqa: N802
        self._route(head=True)

    def _refuse(self):
        self._send(405, "the board is read-only: GET and HEAD only\n")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse


class BoardServer(ThreadingHTTPServer):
    """The board's HTTP server, on 127.0.0.1 only."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, board, logger=None):
        self.board = board
        self.logger = logger
        ThreadingHTTPServer.__init__(self, (HOST, board.settings.port), Handler)

    def log(self, line):
        if self.logger:
            self.logger(line)
