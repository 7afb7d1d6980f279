"""What the tests share that is not a fixture: where things are (the project, the corpora under
tests/), and the one way a test waits for something (``wait_for``, over module_utils/lab/wait.py's
``wait_until``). tests/conftest.py puts this folder on sys.path: ``from lab_testing import ROOT``.

The tests mirror the code (CONTRIBUTING.md, "Tests"): tests/unit/<package>/ for module_utils'
packages, tests/unit/library/ for the modules' main() and docs, tests/unit/roles/, playbooks/,
plugins/, tools/, toolchain/, docs/ for what those folders hold; tests/cluster/ against real
control planes. The corpora stay here, beside this file.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from ansible.module_utils.lab.wait import WaitTimeout, wait_until

TESTS = pathlib.Path(__file__).resolve().parent
ROOT = TESTS.parent


def wait_for(what, check, timeout=60, interval=0.3):
    """check() until it returns something true, at most `timeout` s, `interval` s apart; return
    that value. When the time is up the test fails saying what was awaited, for how long and what
    check() last returned ("waited <timeout>s for <what>; last seen: ..."). What check raises
    propagates (a process that died fails the wait at once). The lab's own bounded wait
    (module_utils/lab/wait.py) does the waiting: the tests keep no deadline loop of their own."""
    def look(_left):
        value = check()
        return bool(value), value
    try:
        return wait_until(what, look, timeout, interval=interval)[0]
    except WaitTimeout as timeout_up:
        pytest.fail(str(timeout_up), pytrace=False)


# ---- a trainee's lab folder and the settings the grader compares it with (lab_grade) ----

TRAINEE = TESTS / "trainee"     # correct/: the right answer; wrong/<case>/: overlays, expect.yml


def lab_from(tmp_path, overlay=None):
    lab = tmp_path / "lab"
    shutil.copytree(TRAINEE / "correct", lab)
    if overlay:
        for src in (TRAINEE / "wrong" / overlay).rglob("*"):
            if src.is_file() and src.name != "expect.yml":
                dest = lab / src.relative_to(TRAINEE / "wrong" / overlay)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
    for path in lab.rglob("*"):
        if path.is_file():
            path.write_text(path.read_text().replace("@LAB@", str(lab)))
    return lab


def lab_settings(*extra_vars):
    """lab_grade_settings from inventory/group_vars/all/lab.yml, rendered by Ansible itself
    (with -e extra_vars), keeping the settings the checks compare against."""
    from ansible.module_utils.grader.grade import SETTINGS
    args = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost",
            "-m", "ansible.builtin.debug", "-a", "var=lab_grade_settings"]
    for extra in extra_vars:
        args += ["-e", extra]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
                         env=dict(os.environ, ANSIBLE_CALLBACK_RESULT_FORMAT="json",
                                  ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1"))
    rendered = json.loads(out.stdout.split("=>", 1)[1])["lab_grade_settings"]
    return {k: v for k, v in rendered.items() if k in SETTINGS}


# ---- lab-node-2's recorded objects (diagnosis_corpus/dra-lab-node-2/README.md) as a bundle ----

DRA_CORPUS = TESTS / "diagnosis_corpus/dra-lab-node-2"


def dra_corpus_bundle(tmp_path, crictl, edit=None):
    """A support bundle folder of the DRA corpus (lab-node-2 on NVIDIA's DRA driver, its Pod
    dra-lab/gpu-by-claim) with `crictl` (a file of the corpus) as the node's crictl info;
    `edit(cluster)` changes the cluster files ({name: document}) first. Returns its path."""
    root = tmp_path / "bundle"
    (root / "cluster").mkdir(parents=True)
    cluster = {name: json.loads((DRA_CORPUS / name).read_text()) for name in (
        "nodes.json", "pods.json", "events.json", "resourceclaims.json", "resourceslices.json", "deviceclasses.json")}
    if edit:
        edit(cluster)
    for name, doc in cluster.items():
        (root / "cluster" / name).write_text(json.dumps(doc))
    (root / "logs/nvidia-dra-driver-gpu").mkdir(parents=True)
    for plugin in [p["metadata"]["name"] for p in cluster["pods.json"]["items"]
                   if p["metadata"]["namespace"] == "nvidia-dra-driver-gpu"]:
        shutil.copy(DRA_CORPUS / "kubelet-plugin.log", root / "logs/nvidia-dra-driver-gpu" / (plugin + ".log"))
    (root / "logs/dra-lab").mkdir(parents=True)
    shutil.copy(DRA_CORPUS / "gpu-by-claim.log", root / "logs/dra-lab/gpu-by-claim.log")
    (root / "nodes/lab-node-2").mkdir(parents=True)
    shutil.copy(DRA_CORPUS / crictl, root / "nodes/lab-node-2/crictl-info.json")
    return str(root)
