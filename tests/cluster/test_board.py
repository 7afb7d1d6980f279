"""The live board on a real control plane: playbooks/board.yml started for a lab of its own, the
page in a real headless Chromium, and the lab changed by the lab's own playbooks - a step graded
broken (grade.yml), a drill put in place (drill.yml), a diagnosis (diagnose.yml) - while the page
follows without a reload.

The lab here has its own cluster (kwokctl, a unique name, its own KWOK_WORKDIR - not the session
cluster of conftest.py: a drill installs a device plugin, a taint and an admission policy that
other tests' diagnoses would see), its own lab_root and state folder, and a free port.
"""
import json
import os
import pathlib
import socket
import subprocess
import sys

import pytest

from ansible.module_utils.diagnosis.verdict import LAYERS
from lab_clusters import kwok_cluster  # noqa: E402  (tests/cluster/lab_clusters.py)

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "roles" / "lab_board" / "files"))
from board_control import files_dir  # noqa: E402  (roles/lab_board/files/board_control.py)
from headless_chromium import Chromium, binary  # noqa: E402
from lab_testing import wait_for as wait  # tests/lab_testing.py: the one bounded wait

BIN = os.path.expanduser(os.environ.get("LAB_BIN_DIR", "~/.cache/gpu-incident-lab/bin"))
PLAYBOOK = str(pathlib.Path(sys.executable).parent / "ansible-playbook")
NODES = ["lab-node-0", "lab-node-1", "lab-node-2"]
NODES_JS = ("Object.fromEntries([...document.querySelectorAll('#nodes tr[data-node]')].map(r => [r.dataset.node,"
            " {kind: r.dataset.kind, ready: r.dataset.ready, capacity: r.cells[3].innerText,"
            " allocatable: r.cells[4].innerText, taints: r.cells[5].innerText}]))")


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory):
    """A kwok cluster of this module's own (conftest.kwok_cluster): a drill installs a device plugin,
    a taint and an admission policy that other tests' diagnoses would pick up."""
    with kwok_cluster(tmp_path_factory, "board-pytest") as kubeconfig:
        yield kubeconfig


@pytest.fixture(scope="module")
def lab(own_cluster, tmp_path_factory):
    """The lab's three nodes (kwok) in the module's cluster; a lab_root, a state folder, a port."""
    from ansible.module_utils.kube.client import Kube, condition
    kube = Kube(own_cluster)
    for name in NODES:
        kube.create("/api/v1/nodes", {"metadata": {
            "name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"}},
            "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
    wait("the three kwok nodes Ready", lambda: all(
        (condition(kube.get("/api/v1/nodes/" + n), "Ready") or {}).get("status") == "True" for n in NODES))
    tmp = tmp_path_factory.mktemp("board-lab")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    extra = ["-e", "lab_root=%s" % (tmp / "gpuop"), "-e", "lab_state_dir=%s" % (tmp / "state"),
             "-e", "lab_kubeconfig=%s" % own_cluster, "-e", "lab_real_node=false",
             "-e", "lab_board_port=%d" % port]
    yield {"kubeconfig": own_cluster, "root": tmp / "gpuop", "state": tmp / "state", "port": port,
           "extra": extra, "tmp": tmp, "kube": kube}
    subprocess.run([PLAYBOOK, "playbooks/board.yml", "-e", "state=absent"] + extra, cwd=str(ROOT),
                   capture_output=True, text=True, timeout=120)


def playbook(lab, name, *args):
    out = subprocess.run([PLAYBOOK, name] + lab["extra"] + list(args), cwd=str(ROOT),
                         capture_output=True, text=True, timeout=600)
    recap = [line for line in out.stdout.splitlines() if line.startswith("localhost")]
    return out.returncode, out.stdout + out.stderr, recap[-1] if recap else ""


@pytest.fixture(scope="module")
def browser():
    if not binary():
        pytest.fail("no Chromium: apt-get install chromium (the browser tests need Debian's package)",
                    pytrace=False)
    with Chromium(width=1200, height=1000) as chromium:
        yield chromium


def test_board_follows_grade_drill_and_diagnosis(lab, browser):
    code, text, recap = playbook(lab, "playbooks/board.yml")
    assert code == 0 and "changed=1" in recap, text
    url = "http://127.0.0.1:%d/" % lab["port"]
    assert url in text
    assert (pathlib.Path(files_dir(str(lab["state"]))) / "board.pid").exists()
    code, text, recap = playbook(lab, "playbooks/board.yml")
    assert code == 0 and "changed=0" in recap, text
    code, text, recap = playbook(lab, "playbooks/board.yml", "--check")
    assert code == 0 and "changed=0" in recap, text

    page = browser.open(url)
    page.evaluate("window.__sameDocument = 'yes'")
    nodes = page.evaluate(NODES_JS)
    assert sorted(nodes) == NODES
    assert all(n["kind"] == "kwok" and n["ready"] == "True" for n in nodes.values()), nodes
    assert nodes["lab-node-0"]["capacity"] == "-"
    assert {r for r in page.evaluate("[...document.querySelectorAll('#steps tr[data-step]')]"
                                     ".map(r => r.dataset.state)")} == {"not-graded"}
    page.screenshot(str(lab["tmp"] / "board-fresh.png"))

    # grade.yml grades step 1 of an empty lab folder: FAIL, and the page follows
    code, text, _recap = playbook(lab, "playbooks/grade.yml", "-e", "grade_steps=1")
    assert code != 0 and "Step 1" in text and "FAIL" in text, text
    assert (lab["state"] / "grade-report.json").exists()
    reasons = json.loads((lab["state"] / "grade-report.json").read_text())["steps"]["1"]["reasons"]
    page.wait_for("document.querySelector('#steps tr[data-step=\"1\"]').dataset.state === 'FAIL'",
                  "step 1 FAIL on the page", timeout=20)
    row = page.evaluate("document.querySelector('#steps tr[data-step=\"1\"]').innerText")
    assert reasons[0][:60] in " ".join(row.split()), (reasons, row)

    # drill.yml puts the tainted-node drill in place: the drill, the taint and the GPUs follow
    code, text, recap = playbook(lab, "playbooks/drill.yml", "-e", "drill=tainted-node")
    assert code == 0, text
    page.wait_for("document.querySelector('[data-drill=\"tainted-node\"]') !== null", "the drill", timeout=20)
    page.wait_for("(document.querySelector('#nodes tr[data-node=\"lab-node-0\"]') || {}).innerText"
                  ".includes('nvidia.com/gpu=present:NoSchedule')", "lab-node-0's taint", timeout=20)
    # the page may hold a poll taken while the drill ran (taint patched, status not yet): wait for
    # the whole node as drill.yml left it, then read it
    page.wait_for("(() => { const r = document.querySelector('#nodes tr[data-node=\"lab-node-0\"]');"
                  " return r && r.cells[3].innerText === '4' && r.cells[4].innerText === '4'; })()",
                  "lab-node-0's 4 GPUs in capacity and allocatable", timeout=20)
    nodes = page.evaluate(NODES_JS)
    assert nodes["lab-node-0"]["capacity"] == "4" and nodes["lab-node-0"]["allocatable"] == "4"
    assert "nvidia.com/gpu=present:NoSchedule" in nodes["lab-node-0"]["taints"], nodes

    # diagnose.yml: diagnosis.json and diagnosis.html beside it; the picture follows on the board
    code, text, recap = playbook(lab, "playbooks/diagnose.yml")
    assert code == 0, text
    html = lab["state"] / "diagnosis.html"
    assert html.exists() and (lab["state"] / "diagnosis.json").exists()
    page.wait_for("document.querySelectorAll('#diagnosis [data-layer]').length === 6",
                  "the diagnosis picture", timeout=20)
    layers = page.evaluate("[...document.querySelectorAll('#diagnosis [data-layer]')].map(e => [e.dataset.layer,"
                           " e.dataset.status, e.dataset.firstBroken])")
    assert [l[0] for l in layers] == list(reversed(LAYERS))
    assert [l[0] for l in layers if l[2] == "true"] == ["scheduling"]
    assert page.evaluate("window.__sameDocument") == "yes", "the page was reloaded"
    page.screenshot(str(lab["tmp"] / "board-drill.png"))
    page.close()

    # the page diagnose.yml wrote, from disk: the same six layers, scheduling marked
    report = browser.open(html.as_uri())
    marked = report.evaluate("[...document.querySelectorAll('[data-layer]')].map(e => [e.dataset.layer,"
                             " e.dataset.firstBroken])")
    assert marked == [[l, "true" if l == "scheduling" else "false"] for l in reversed(LAYERS)]
    assert "NoSchedule" in report.evaluate("document.querySelector('[data-layer=\"scheduling\"]').innerText")
    report.screenshot(str(lab["tmp"] / "diagnosis.png"))
    report.close()
    # a second diagnosis of the same lab keeps the page as it is
    before = html.read_bytes()
    code, text, recap = playbook(lab, "playbooks/diagnose.yml")
    assert code == 0 and html.read_bytes() == before

    # the board wrote nothing in the lab: no file of its own in the state folder or the lab folder
    # (what is there, grade.yml, drill.yml and diagnose.yml wrote); stopping it leaves no process
    assert not [p for p in list(lab["state"].rglob("*")) + list(lab["root"].rglob("*"))
                if p.name.startswith("board")], "the board wrote into the lab"
    pid = int((pathlib.Path(files_dir(str(lab["state"]))) / "board.pid").read_text())
    code, text, recap = playbook(lab, "playbooks/board.yml", "-e", "state=absent")
    assert code == 0 and "changed=1" in recap, text
    wait("the board process gone", lambda: not os.path.exists("/proc/%d" % pid)
         or "serve" not in open("/proc/%d/cmdline" % pid).read(), timeout=20)
    code, text, recap = playbook(lab, "playbooks/board.yml", "-e", "state=absent")
    assert code == 0 and "changed=0" in recap, text
