#!/usr/bin/env python3
"""The screenshots of docs/board.md, made by the project's own code in a real headless Chromium.

    .venv/bin/python tools/docs_screenshots.py                      docs/images/{diagnosis,board}.png
    .venv/bin/python tools/docs_screenshots.py --out /tmp/shots     elsewhere
    .venv/bin/python tools/docs_screenshots.py --state-dir DIR --kubeconfig FILE [--classroom-dir DIR]
                                                                    the board of a running lab

diagnosis.png: gpu_diagnose's HTML page of the real incident bundle (tests/bundle_corpus/
lab-node-1-incident: the drop-in on disk, containerd never restarted). board.png: the board
(started by roles/lab_board/files/lab_board.py on a free loopback port, stopped afterwards)
following a state folder - by default one this script writes in a temp folder: that bundle's
diagnosis, a grade report in grade.yml's shape, a drill record in drill.yml's, and a class
table written by module_utils/grader/classroom.py (classroom-grade.yml's code) for three trainees:
one graded on the real node, one on the kwok-only fallback, one unreachable.
"""
import argparse
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
INCIDENT = ROOT / "tests" / "bundle_corpus" / "lab-node-1-incident"
LAUNCHER = ROOT / "roles" / "lab_board" / "files" / "lab_board.py"
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "module_utils"))

import ansible.module_utils  # noqa: E402

ansible.module_utils.__path__.append(str(ROOT / "module_utils"))

from ansible.module_utils.grader import classroom  # noqa: E402
from ansible.module_utils.diagnosis.bundle_source import open_bundle  # noqa: E402
from ansible.module_utils.diagnosis.walk import Diagnosis  # noqa: E402
from ansible.module_utils.report.render import diagnosis_html  # noqa: E402
from headless_chromium import Chromium  # noqa: E402


def incident_diagnosis(bundle):
    return Diagnosis(open_bundle(str(bundle), {})).run(None, None, "lab-node-1")


def demo_state(folder, bundle):
    """A lab's state folder and class reports as the lab's playbooks write them."""
    state, classroom_dir = folder / "state", folder / "classroom"
    state.mkdir()
    (state / "diagnosis.json").write_text(json.dumps(incident_diagnosis(bundle), indent=2) + "\n")
    (state / "drill.json").write_text(json.dumps({
        "drill": "runtime-not-loaded", "layer": "container-runtime", "node": "lab-node-1",
        "pod": "gpu-drill/cuda-drill"}, indent=2) + "\n")
    fail3 = ("merge.txt: LOADED_RUNTIMES=runc is the observation, but CONFLICT=no: the drop-in's "
             "plugins.\"io.containerd.grpc.v1.cri\" table replaces the main file's on containerd 1.7")

    def result(ok, reason=None):
        return {"passed": ok, "reasons": [] if ok else [reason], "advice": []}

    (state / "grade-report.json").write_text(json.dumps({"lab_root": "/home/trainee/gpuop", "steps": {
        "1": result(True), "2": result(True), "3": result(False, fail3), "4": result(True)}}, indent=2) + "\n")
    hosts = {
        "trainee-01": {"status": "graded", "lab": "real node", "steps": {
            "1": result(True), "2": result(True), "3": result(True), "4": result(True)}},
        "trainee-02": {"status": "graded", "lab": "kwok-only (no root on this host)", "steps": {
            "1": result(True), "2": result(False, "99-nvidia.toml: [plugins.io.containerd.grpc.v1.cri...] "
                                                  "unquoted - TOML builds plugins -> io -> containerd"),
            "3": result(False, fail3), "4": result(True)}},
        "trainee-03": {"status": "unreachable", "lab": "?",
                       "reason": "ssh: connect to host 192.0.2.13 port 22: No route to host"},
    }
    markdown, xml, _failed = classroom.build(hosts)
    classroom_dir.mkdir()
    (classroom_dir / "class-report.md").write_text(markdown)
    (classroom_dir / "class-report.xml").write_text(xml)
    return state, classroom_dir, sorted(hosts) + ["trainee-04"]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def board(*args):
    out = subprocess.run([sys.executable, str(LAUNCHER), "--module-utils", str(ROOT / "module_utils")]
                         + [str(a) for a in args], capture_output=True, text=True, timeout=60)
    answer = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {"msg": out.stderr}
    if out.returncode != 0:
        raise SystemExit("the board: %s" % answer.get("msg"))
    return answer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "images"))
    parser.add_argument("--state-dir", help="a running lab's state folder (lab_state_dir) instead of the demo")
    parser.add_argument("--kubeconfig", default="", help="that lab's kubeconfig (its nodes)")
    parser.add_argument("--classroom-dir", default="", help="a folder with class-report.xml")
    parser.add_argument("--trainee", action="append", default=[], help="a trainee host (repeat)")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix="docs-screenshots-"))
    try:
        bundle = work / "bundle"
        shutil.copytree(INCIDENT, bundle)
        page_path = bundle / "diagnosis.html"
        page_path.write_text(diagnosis_html(incident_diagnosis(bundle), str(bundle), str(page_path)))
        if args.state_dir:
            state, classroom_dir, trainees = pathlib.Path(args.state_dir), args.classroom_dir, args.trainee
            mine = board("status", "--state-dir", state)
            if mine.get("running"):   # its own board would be restarted with these settings, then stopped
                raise SystemExit("%s already has a board running (pid %s, %s): shoot that one with your browser, "
                                 "or stop it first (ansible-playbook playbooks/board.yml -e state=absent)"
                                 % (state, mine["pid"], mine["url"]))
        else:
            state, classroom_dir, trainees = demo_state(work, bundle)
        port = free_port()
        options = ["--state-dir", state, "--port", port, "--kubeconfig", args.kubeconfig,
                   "--classroom-dir", classroom_dir] + sum((["--trainee", t] for t in trainees), [])
        with Chromium(width=1100, height=900) as browser:
            page = browser.open(page_path.as_uri())
            page.screenshot(str(out / "diagnosis.png"))
            page.close()
            started = board("ensure", *options)
            try:
                page = browser.open(started["url"])
                page.wait_for("document.querySelectorAll('#steps tr[data-step]').length >= 8", "the steps")
                page.screenshot(str(out / "board.png"))
                page.close()
            finally:
                board("ensure", "--state", "absent", *options)
        for name in ("diagnosis.png", "board.png"):
            print(out / name)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
