"""The live board without a cluster (roles/lab_board/files: board_control.py, board_server.py, the
launcher lab_board.py): its process, its role, what it serves, and the page in a real headless
Chromium following the lab's state folder as it changes (no reload).

Every board here follows a state folder under the test's temp folder on a free port - never the
lab's own. The class table is written by module_utils/grader/classroom.py, the code classroom-grade.yml
runs; the grade report has grade.yml's shape ({lab_root, steps}).
"""
import json
import os
import pathlib
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from lab_testing import ROOT  # tests/lab_testing.py

import pytest

from ansible.module_utils.grader import classroom
from ansible.module_utils.diagnosis.verdict import LAYERS

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "roles" / "lab_board" / "files"))
import board_control  # noqa: E402  (roles/lab_board/files/board_control.py)
from headless_chromium import Chromium, binary  # noqa: E402

LAUNCHER = ROOT / "roles" / "lab_board" / "files" / "lab_board.py"
PLAYBOOK = str(pathlib.Path(sys.executable).parent / "ansible-playbook")
INCIDENT = ROOT / "tests" / "bundle_corpus" / "lab-node-1-incident"
STEPS_JS = ("[...document.querySelectorAll('#steps tr[data-step]')].map(r => [r.dataset.step, r.dataset.state,"
            " r.cells[3].innerText])")
HOSTS_JS = ("[...document.querySelectorAll('#classroom tr[data-host]')].map(r => ({host: r.dataset.host,"
            " status: r.dataset.status, lab: r.dataset.lab, text: r.innerText,"
            " cells: Object.fromEntries([...r.querySelectorAll('td[data-step]')].map(c => [c.dataset.step, c.dataset.state]))}))")


def own(state):
    """The board's own folder for a state folder (pid, settings, log): outside the lab."""
    return pathlib.Path(board_control.files_dir(str(state)))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def board(*args):
    """Run the launcher; (exit code, its JSON answer)."""
    out = subprocess.run([sys.executable, str(LAUNCHER), "--module-utils", str(ROOT / "module_utils")]
                         + [str(a) for a in args], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip(), out.stderr
    return out.returncode, json.loads(out.stdout.strip().splitlines()[-1])


def get(url, method="GET", host=None):
    request = urllib.request.Request(url, method=method, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode("utf-8"), dict(answer.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8"), dict(exc.headers)


def grade_report(state, steps):
    """Write grade-report.json as playbooks/grade.yml does."""
    data = {"lab_root": "/home/trainee/gpuop", "steps": {
        str(k): {"passed": v is True, "reasons": [] if v is True else [v], "advice": []} for k, v in steps.items()}}
    tmp = state / "grade-report.json.tmp"
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, state / "grade-report.json")


def diagnosis_of_incident():
    from ansible.module_utils.diagnosis.bundle_source import open_bundle
    from ansible.module_utils.diagnosis.walk import Diagnosis
    return Diagnosis(open_bundle(str(INCIDENT), {})).run(None, None, "lab-node-1")


def class_report(folder, hosts):
    """class-report.md/.xml as classroom-grade.yml writes them (module_utils/grader/classroom.py)."""
    markdown, xml, _failed = classroom.build(hosts)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "class-report.md").write_text(markdown)
    (folder / "class-report.xml").write_text(xml)


def graded(*results, lab="real node"):
    return {"status": "graded", "lab": lab, "steps": {
        str(i): {"passed": r is True, "reasons": [] if r is True else [r], "advice": []}
        for i, r in enumerate(results, 1)}}


@pytest.fixture(scope="module")
def browser():
    if not binary():
        pytest.fail("no Chromium: apt-get install chromium (the browser tests need Debian's package)",
                    pytrace=False)
    with Chromium(width=1200, height=1000) as chromium:
        yield chromium


@pytest.fixture
def lab(tmp_path):
    """A state folder and a port; the board is stopped whatever the test did."""
    state = tmp_path / "state"
    state.mkdir()
    port = free_port()
    yield state, port
    board("ensure", "--state", "absent", "--state-dir", state, "--port", port)


def test_board_process_start_rerun_status_stop(lab):
    state, port = lab
    code, started = board("ensure", "--state-dir", state, "--port", port, "--poll-seconds", "0.5")
    assert code == 0 and started["changed"] and started["url"] == "http://127.0.0.1:%d/" % port
    pid = started["pid"]
    assert (own(state) / "board.pid").read_text().strip() == str(pid)
    # detached: its own session, not a child of ours
    assert os.getsid(pid) == pid
    code, again = board("ensure", "--state-dir", state, "--port", port, "--poll-seconds", "0.5")
    assert code == 0 and again["changed"] is False and again["pid"] == pid
    assert board("status", "--state-dir", state)[1] == {"changed": False, "running": True, "pid": pid,
                                                       "url": started["url"], "files": str(own(state))}
    # the board writes nothing in the lab: its pid, settings and log are in a folder of its own
    assert os.listdir(state) == [] and started["files"] == str(own(state))
    assert sorted(os.listdir(own(state))) == ["board.json", "board.log", "board.pid"]
    assert os.stat(own(state)).st_mode & 0o777 == 0o700
    # check mode (--dry-run) of other settings: says it would restart, does nothing
    code, dry = board("ensure", "--state-dir", state, "--port", port, "--title", "x", "--dry-run")
    assert code == 0 and dry["changed"] and dry["msg"].startswith("would restart")
    assert board("status", "--state-dir", state)[1]["pid"] == pid
    # listens on 127.0.0.1 only (/proc/net/tcp: local address 0100007F, state 0A = LISTEN)
    listening = [line.split()[1] for line in open("/proc/net/tcp").read().splitlines()[1:]
                 if line.split()[3] == "0A" and int(line.split()[1].split(":")[1], 16) == port]
    assert listening == ["0100007F:%04X" % port]
    # other settings restart it
    code, restarted = board("ensure", "--state-dir", state, "--port", port, "--title", "Class A")
    assert code == 0 and restarted["changed"] and restarted["pid"] != pid
    assert not os.path.exists("/proc/%d" % pid) or "serve" not in open("/proc/%d/cmdline" % pid).read()
    code, stopped = board("ensure", "--state", "absent", "--state-dir", state, "--port", port)
    assert code == 0 and stopped["changed"] and not (own(state) / "board.pid").exists()
    assert board("status", "--state-dir", state)[1]["running"] is False
    code, again = board("ensure", "--state", "absent", "--state-dir", state, "--port", port)
    assert code == 0 and again["changed"] is False


def test_a_board_of_an_earlier_version_is_found_and_stopped(lab):
    """An earlier version kept board.pid and board.json in the state folder: absent still stops it."""
    state, port = lab
    code, started = board("ensure", "--state-dir", state, "--port", port)
    assert code == 0
    for name in ("board.pid", "board.json"):
        os.replace(own(state) / name, state / name)
    assert board("status", "--state-dir", state)[1]["pid"] == started["pid"]
    code, stopped = board("ensure", "--state", "absent", "--state-dir", state, "--port", port)
    assert code == 0 and stopped["changed"] and not (state / "board.pid").exists()
    assert not os.path.exists("/proc/%d" % started["pid"]) or "serve" not in open(
        "/proc/%d/cmdline" % started["pid"]).read()


def test_a_board_started_under_another_runtime_folder_is_still_found_and_stopped(lab, tmp_path):
    """Its pid file is where XDG_RUNTIME_DIR said when it started; asked from a shell without
    it (ssh, sudo), the board is found by its process and stopped all the same."""
    state, port = lab
    code, started = board("ensure", "--state-dir", state, "--port", port)
    assert code == 0
    moved = tmp_path / "elsewhere"
    os.rename(own(state), moved)                 # as if it had started under another runtime folder
    assert board("status", "--state-dir", state)[1]["pid"] == started["pid"]
    code, stopped = board("ensure", "--state", "absent", "--state-dir", state, "--port", port)
    assert code == 0 and stopped["changed"] and "stopped the board (pid %d)" % started["pid"] in stopped["msg"]
    assert board("status", "--state-dir", state)[1]["running"] is False


def test_a_board_folder_that_is_not_the_user_s_alone_is_refused(lab, tmp_path):
    state, port = lab
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    planted = own(state)
    planted.symlink_to(decoy)        # planted where the board keeps its pid
    try:
        code, answer = board("ensure", "--state-dir", state, "--port", port)
        assert code == 1 and "is not a folder of this user's alone" in answer["msg"]
        assert os.listdir(decoy) == []
    finally:
        planted.unlink()


def test_port_in_use_is_refused_plainly(lab, tmp_path):
    state, port = lab
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # the board's last connections may wait in TIME_WAIT
    holder.bind(("127.0.0.1", port))
    holder.listen(1)
    try:
        code, answer = board("ensure", "--state-dir", state, "--port", port)
    finally:
        holder.close()
    assert code == 1 and answer["failed"]
    assert answer["msg"] == ("port %d on 127.0.0.1 is in use by another program; give the board another "
                             "port: -e lab_board_port=PORT" % port)
    assert not (own(state) / "board.pid").exists()
    # another lab's board on that port is named
    assert board("ensure", "--state-dir", state, "--port", port)[0] == 0
    other = tmp_path / "other"
    code, answer = board("ensure", "--state-dir", other, "--port", port)
    assert code == 1 and "in use by the board of %s" % state in answer["msg"]


def test_serves_only_what_it_renders(lab, tmp_path):
    state, port = lab
    secret = "SECRET-TOKEN-%d" % port
    kubeconfig = tmp_path / "kube" / "kubeconfig.yaml"
    kubeconfig.parent.mkdir()
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
                          "'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {token: %s}}]\ncontexts: "
                          "[{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n" % secret)
    (state / "grade-report.json").write_text('{"steps": {}}')
    (state / "id_rsa").write_text(secret)
    assert board("ensure", "--state-dir", state, "--port", port, "--kubeconfig", kubeconfig)[0] == 0
    base = "http://127.0.0.1:%d" % port
    status, body, headers = get(base + "/")
    assert status == 200 and "default-src 'none'" in headers["Content-Security-Policy"]
    status, state_json, _h = get(base + "/state")
    assert status == 200 and "the cluster does not answer" in json.loads(state_json)["html"]
    for text in (body, state_json):
        assert secret not in text
    for path in ("/grade-report.json", "/id_rsa", "/board.pid", "/../kube/kubeconfig.yaml",
                 "/%2e%2e/kube/kubeconfig.yaml", "/kubeconfig", "/static/../../etc/passwd"):
        status, text, _h = get(base + path)
        assert status == 404 and secret not in text, path
    for method in ("POST", "PUT", "DELETE"):
        assert get(base + "/", method=method)[0] == 405
    # DNS rebinding: a name that is not loopback gets nothing
    assert get(base + "/state", host="attacker.example:%d" % port)[0] == 403
    assert get(base + "/state", host="localhost:9999")[0] == 200   # an SSH tunnel's local port


def test_page_follows_the_lab_without_reload(lab, browser, tmp_path):
    state, port = lab
    classroom_dir = tmp_path / "classroom"
    class_report(classroom_dir, {"trainee-01": graded(True, True),
                                 "trainee-02": graded(True, "merge.txt: MAIN_RUNTIMES is missing",
                                                      lab="kwok-only (no root on this host)"),
                                 "trainee-03": {"status": "unreachable", "lab": "?",
                                                "reason": "ssh: connect to host 192.0.2.13 port 22: No route to host"}})
    code, started = board("ensure", "--state-dir", state, "--port", port, "--poll-seconds", "0.5",
                          "--classroom-dir", classroom_dir, "--trainee", "trainee-01", "--trainee",
                          "trainee-02", "--trainee", "trainee-03", "--trainee", "trainee-04")
    assert code == 0, started
    page = browser.open(started["url"])
    page.evaluate("window.__sameDocument = 'yes'")
    # the style sheet holds whole (nothing escaped in it): the body's font is the sheet's
    assert page.evaluate("getComputedStyle(document.body).fontFamily").startswith("system-ui")
    # nothing graded yet: the eight steps, none graded
    steps = page.evaluate(STEPS_JS)
    assert [s[0] for s in steps] == [str(n) for n in range(1, 9)]
    assert {s[1] for s in steps} == {"not-graded"}
    assert "No drill in place" in page.evaluate("document.getElementById('drill').innerText")
    assert "No diagnosis yet" in page.evaluate("document.getElementById('diagnosis').innerText")
    # a host row per trainee: graded, the kwok-only fallback, unreachable, never graded
    hosts = {h["host"]: h for h in page.evaluate(HOSTS_JS)}
    assert sorted(hosts) == ["trainee-01", "trainee-02", "trainee-03", "trainee-04"]
    assert hosts["trainee-01"]["cells"] == {"1": "PASS", "2": "PASS"}
    assert hosts["trainee-02"]["cells"] == {"1": "PASS", "2": "FAIL"}
    assert hosts["trainee-02"]["lab"] == "kwok-only (no root on this host)"
    assert "merge.txt: MAIN_RUNTIMES is missing" in hosts["trainee-02"]["text"]
    assert hosts["trainee-03"]["status"] == "unreachable" and "No route to host" in hosts["trainee-03"]["text"]
    assert hosts["trainee-04"]["status"] == "not-graded" and "not graded yet" in hosts["trainee-04"]["text"]
    fallback = page.evaluate("[...document.querySelectorAll('#classroom td[data-fallback=\"true\"]')]"
                             ".map(c => [c.parentElement.dataset.host, c.innerText])")
    assert fallback == [["trainee-02", "kwok-only (no root on this host) fallback"]]
    page.screenshot(str(tmp_path / "board-start.png"))

    # a step graded broken: the row follows, with its reason
    grade_report(state, {1: True, 2: True, 3: "merge.txt: CONFLICT=no, but the drop-in's table replaces the main one"})
    page.wait_for("document.querySelector('#steps tr[data-step=\"3\"]').dataset.state === 'FAIL'",
                  "step 3 graded FAIL on the page", timeout=15)
    steps = {s[0]: s for s in page.evaluate(STEPS_JS)}
    assert steps["1"][1] == "PASS" and steps["2"][1] == "PASS" and steps["4"][1] == "not-graded"
    assert "the drop-in's table replaces the main one" in steps["3"][2]
    # a drill put in place, and its diagnosis
    (state / "drill.json").write_text(json.dumps({"drill": "runtime-not-loaded", "layer": "container-runtime",
                                                  "node": "lab-node-1", "pod": "gpu-drill/cuda-drill"}))
    (state / "diagnosis.json").write_text(json.dumps(diagnosis_of_incident()))
    page.wait_for("document.querySelector('[data-drill=\"runtime-not-loaded\"]') !== null",
                  "the drill on the page", timeout=15)
    page.wait_for("document.querySelectorAll('#diagnosis [data-layer]').length === 6",
                  "the diagnosis picture on the page", timeout=15)
    layers = page.evaluate("[...document.querySelectorAll('#diagnosis [data-layer]')].map(e => [e.dataset.layer,"
                           " e.dataset.firstBroken])")
    assert layers == [[l, "true" if l == "container-runtime" else "false"] for l in reversed(LAYERS)]
    # the step passes on a later run that grades only it; one that regrades step 1 broken is marked
    grade_report(state, {1: "config.toml: version 2 is missing"})
    page.wait_for("document.querySelector('#steps tr[data-step=\"1\"]').dataset.state === 'FAIL'",
                  "step 1 failing after it passed", timeout=15)
    row = page.evaluate("document.querySelector('#steps tr[data-step=\"1\"]').innerText")
    assert "was PASS" in row
    # steps the latest run did not grade keep their earlier grade, said so
    assert "an earlier run" in page.evaluate("document.querySelector('#steps tr[data-step=\"2\"]').innerText")
    # the class follows too: trainee-01 breaks step 2 after passing it
    class_report(classroom_dir, {"trainee-01": graded(True, "99-nvidia.toml: the runtime is missing"),
                                 "trainee-02": graded(True, True, lab="kwok-only (no root on this host)"),
                                 "trainee-03": graded(True, True)})
    page.wait_for("document.querySelector('#classroom tr[data-host=\"trainee-01\"] td[data-step=\"2\"]')"
                  ".dataset.state === 'FAIL'", "trainee-01's step 2 failing", timeout=15)
    hosts = {h["host"]: h for h in page.evaluate(HOSTS_JS)}
    assert "was PASS" in hosts["trainee-01"]["text"]
    assert hosts["trainee-03"]["status"] == "graded"
    assert page.evaluate("window.__sameDocument") == "yes", "the page was reloaded"
    assert page.evaluate("document.getElementById('live').dataset.state") == "ok"
    page.screenshot(str(tmp_path / "board-followed.png"))
    # the board stops: the page says it does not answer, and keeps what it showed
    assert board("ensure", "--state", "absent", "--state-dir", state, "--port", port)[0] == 0
    page.wait_for("document.getElementById('live').dataset.state === 'down'", "the page noticing", timeout=15)
    assert page.evaluate("document.querySelectorAll('#steps tr[data-step]').length") == 8
    page.close()


def playbook(*args):
    out = subprocess.run([PLAYBOOK, "playbooks/board.yml"] + list(args), cwd=str(ROOT),
                         capture_output=True, text=True, timeout=180)
    recap = [line for line in out.stdout.splitlines() if line.startswith("localhost")]
    return out.returncode, out.stdout + out.stderr, recap[-1] if recap else ""


def test_playbook_rerun_check_mode_absent(lab, tmp_path, browser):
    state, port = lab
    extra = ["-e", "lab_state_dir=%s" % state, "-e", "lab_kubeconfig=%s" % (tmp_path / "none.yaml"),
             "-e", "lab_board_port=%d" % port]
    code, text, recap = playbook(*extra)
    assert code == 0 and "changed=1" in recap, text
    assert "http://127.0.0.1:%d/" % port in text
    pid = int((own(state) / "board.pid").read_text())
    code, text, recap = playbook(*extra)
    assert code == 0 and "changed=0" in recap, text
    assert int((own(state) / "board.pid").read_text()) == pid
    page = browser.open("http://127.0.0.1:%d/" % port)
    assert "the cluster is not there" in page.evaluate("document.getElementById('nodes').innerText")
    page.close()
    code, text, recap = playbook(*(extra + ["--check", "-e", "state=absent"]))
    assert code == 0 and "changed=1" in recap and "would stop" in text, text
    assert board("status", "--state-dir", state)[1]["pid"] == pid
    code, text, recap = playbook(*(extra + ["-e", "state=absent"]))
    assert code == 0 and "changed=1" in recap, text
    assert board("status", "--state-dir", state)[1]["running"] is False
    code, text, recap = playbook(*(extra + ["-e", "state=absent"]))
    assert code == 0 and "changed=0" in recap, text
    # a port in use fails the play with the board's words
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # the board's last connections may wait in TIME_WAIT
    holder.bind(("127.0.0.1", port))
    holder.listen(1)
    try:
        code, text, recap = playbook(*extra)
    finally:
        holder.close()
    assert code != 0 and "is in use by another program" in text and "failed=1" in recap


def test_playbook_with_a_classroom_inventory(lab, tmp_path, browser):
    state, port = lab
    classroom_dir = tmp_path / "classroom"
    class_report(classroom_dir, {"trainee-01": graded(True), "trainee-02": {
        "status": "unreachable", "reason": "not reached over SSH (see the run above)"}})
    inventory = tmp_path / "classroom.yml"
    inventory.write_text("all:\n  children:\n    trainees:\n      hosts:\n"
                         "        trainee-01: {ansible_host: 192.0.2.11}\n"
                         "        trainee-02: {ansible_host: 192.0.2.12}\n"
                         "        trainee-03: {ansible_host: 192.0.2.13}\n")
    code, text, recap = playbook("-i", str(inventory), "-e", "lab_state_dir=%s" % state,
                                 "-e", "lab_kubeconfig=%s" % (tmp_path / "none.yaml"),
                                 "-e", "lab_board_port=%d" % port, "-e", "classroom_report_dir=%s" % classroom_dir)
    assert code == 0 and "changed=1" in recap, text
    page = browser.open("http://127.0.0.1:%d/" % port)
    hosts = {h["host"]: h for h in page.evaluate(HOSTS_JS)}
    assert sorted(hosts) == ["trainee-01", "trainee-02", "trainee-03"]
    assert hosts["trainee-01"]["cells"] == {"1": "PASS"}
    assert hosts["trainee-02"]["status"] == "unreachable"
    assert hosts["trainee-03"]["status"] == "not-graded"
    page.screenshot(str(tmp_path / "board-classroom.png"))
    page.close()


def test_teardown_stops_the_board(lab, tmp_path):
    """playbooks/teardown.yml leaves no process of the lab behind - the board is one."""
    state, port = lab
    name = "board-td-%d" % port
    extra = ["-e", "lab_state_dir=%s" % state, "-e", "lab_kubeconfig=%s" % (tmp_path / "none.yaml"),
             "-e", "lab_board_port=%d" % port, "-e", "lab_cluster_name=%s" % name,
             "-e", "lab_root=%s" % (tmp_path / "gpuop")]
    code, text, _recap = playbook(*extra)
    assert code == 0, text
    pid = board("status", "--state-dir", state)[1]["pid"]
    assert pid
    out = subprocess.run([PLAYBOOK, "playbooks/teardown.yml"] + extra, cwd=str(ROOT), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Teardown | Stop the lab's board" in out.stdout
    assert board("status", "--state-dir", state)[1]["running"] is False
    assert not os.path.exists("/proc/%d" % pid) or "serve" not in open("/proc/%d/cmdline" % pid).read()


def test_a_fleet_costs_one_page_of_nodes_each_poll(tmp_path):
    """The board asks for one page of nodes (limit) each poll and says how many more there are:
    a fleet of 5000 kwok nodes is not listed whole every two seconds."""
    from board_server import NODE_ROWS, Board, Settings
    from ansible.module_utils.report.render import board_body

    asked = []

    class Api(object):
        def get(self, path, params=None):
            asked.append((path, dict(params or {})))
            names = ["lab-node-%d" % i for i in range(5000)]
            page = sorted(names)[:params["limit"]]
            return {"items": [{"metadata": {"name": n}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
                              for n in page],
                    "metadata": {"continue": "token", "remainingItemCount": 5000 - len(page)}}

    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text("{}\n")
    board_ = Board(Settings(tmp_path, 1, kubeconfig=str(kubeconfig)))
    board_._kube = Api()   # pylint: disable=protected-access
    nodes = board_.nodes()
    assert asked == [("/api/v1/nodes", {"limit": NODE_ROWS})]
    assert len(nodes["rows"]) == NODE_ROWS and nodes["more"] == 5000 - NODE_ROWS
    assert "lab-node-1" in [r["name"] for r in nodes["rows"]]
    html = board_body(board_.context())
    assert 'data-more-nodes="%d"' % (5000 - NODE_ROWS) in html and "%d more not shown" % (5000 - NODE_ROWS) in html
