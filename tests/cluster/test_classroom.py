"""A classroom on this machine: two trainee hosts reached over SSH, each with its own lab.

Two local users (created here) stand for two trainee machines; Debian's sshd, started by the
test on a free loopback port with its own config and host key, lets the controller (this
process's user) reach them with a client key made for this run - Ansible talks SSH to them as
to any remote host, nothing goes through `local`. Each trainee gets its own kwok cluster (own
name, own ports). docs/classroom.md's commands run as printed, with the test's inventory:
class setup (twice: the rerun changes nothing on any host), the class grade after trainee-01
did steps 1-2 right and trainee-02 did step 1 with mistake 1, then teardown of one host and
of the class. Needs root (useradd, sshd) and openssh-server (make test installs it: toolchain/host-packages).
"""
import hashlib
import json
import os
import pathlib
import pwd
import re
import shutil
import socket
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET

import pytest
from lab_testing import wait_for  # tests/lab_testing.py: the one bounded wait

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))) / "gpu-incident-lab/bin"
SSHD = "/usr/sbin/sshd"
HOSTS = ("trainee-01", "trainee-02")
FENCE = "`" * 3


def readme_commands():
    """docs/classroom.md's commands (its ```shell block, marked for this test), in order."""
    text = (ROOT / "docs/classroom.md").read_text()
    section = text.split("## The commands", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"^%sshell\n(.*?)^%s" % (FENCE, FENCE), section, re.S | re.M)[0]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("ansible-playbook")]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def user_pids(user):
    out = subprocess.run(["pgrep", "-u", user], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def lab_processes(user):
    """The user's processes other than SSH sessions (Ansible's kept-open connections)."""
    out = subprocess.run(["pgrep", "-a", "-u", user], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if " sshd: " not in " " + line.split(" ", 1)[1]]


class Class:
    def __init__(self, tmp):
        self.tmp = tmp
        self.tag = uuid.uuid4().hex[:6]
        self.users = {h: "lab%s%s" % (self.tag, h[-1]) for h in HOSTS}
        self.port = free_port()
        self.dir = tmp / "class"
        self.dir.mkdir(mode=0o700)
        self.reports = tmp / "reports"
        self.inventory = tmp / "inventory" / "classroom.yml"
        self.sshd = None

    def home(self, host):
        return pathlib.Path(pwd.getpwnam(self.users[host]).pw_dir)

    def start(self):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.dir / "host")], check=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.dir / "client")], check=True)
        for host, user in self.users.items():
            subprocess.run(["useradd", "-m", "-s", "/bin/bash", user], check=True)
            subprocess.run(["usermod", "-p", "*", user], check=True)   # key login only, no password
            ssh = self.home(host) / ".ssh"
            ssh.mkdir(mode=0o700)
            shutil.copy(self.dir / "client.pub", ssh / "authorized_keys")
            (ssh / "authorized_keys").chmod(0o600)
            for path in (ssh, ssh / "authorized_keys"):
                shutil.chown(path, user, user)
        self.start_sshd(".ssh/authorized_keys")
        self.inventory.parent.mkdir()
        # the lab's settings apply to an inventory beside them, as docs/classroom.md says
        (self.inventory.parent / "group_vars").mkdir()
        (self.inventory.parent / "group_vars" / "all").symlink_to(ROOT / "inventory/group_vars/all")
        hosts = {}
        for index, (host, user) in enumerate(self.users.items()):
            hosts[host] = {"ansible_host": "127.0.0.1", "ansible_port": self.port, "ansible_user": user,
                           "ansible_ssh_private_key_file": str(self.dir / "client"),
                           "ansible_ssh_common_args": "-o UserKnownHostsFile=%s -o StrictHostKeyChecking=no"
                                                      % (self.dir / "known_hosts"),
                           "lab_real_node": False, "lab_cluster_name": "class-%s-%d" % (self.tag, index),
                           "lab_port_base": 21000 + (self.port % 400) * 12 + index * 6}
        self.inventory.write_text(json.dumps({"all": {"children": {"trainees": {"hosts": hosts}}}}, indent=1))

    def start_sshd(self, authorized_keys, extra=""):
        """Debian's sshd on this run's loopback port, its own host key, for this class's users only."""
        (self.dir / "sshd_config").write_text(
            "Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s\nAuthorizedKeysFile %s\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nAllowUsers %s\n"
            "%sSubsystem sftp internal-sftp\n" % (self.port, self.dir / "host", self.dir / "sshd.pid",
                                                  authorized_keys, " ".join(self.users.values()), extra))
        os.makedirs("/run/sshd", exist_ok=True)   # sshd's privilege separation folder
        self.sshd = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.dir / "sshd_config")],
                                     stdout=subprocess.DEVNULL, stderr=open(self.dir / "sshd.log", "w"))

        def listening():
            assert self.sshd.poll() is None, (self.dir / "sshd.log").read_text()
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", self.port)) == 0
        wait_for("sshd listening on 127.0.0.1:%d" % self.port, listening, 30)

    def playbook(self, command, timeout=900, inventory=None, reports=None, env=None):
        argv = command.replace("inventory/classroom.yml", str(inventory or self.inventory)).split()
        argv[0] = str(ROOT / ".venv/bin" / argv[0])
        argv += ["-e", "classroom_report_dir=%s" % (reports or self.reports)]
        env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_SSH_CONTROL_PATH_DIR=str(self.dir / "cp"),
                   **(env or {}))
        env.pop("KUBECONFIG", None)
        return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)

    def as_trainee(self, host, script):
        return subprocess.run(
            ["ssh", "-i", str(self.dir / "client"), "-p", str(self.port), "-o", "BatchMode=yes",
             "-o", "UserKnownHostsFile=%s" % (self.dir / "known_hosts"), "-o", "StrictHostKeyChecking=no",
             "%s@127.0.0.1" % self.users[host], "bash -euo pipefail"],
            input=script, capture_output=True, text=True, timeout=120)

    def stop(self):
        for host in HOSTS:
            try:
                kwokctl = self.home(host) / ".cache/gpu-incident-lab/bin/kwokctl"
            except KeyError:   # the user was never created
                continue
            if kwokctl.exists() and self.sshd and self.sshd.poll() is None:
                self.as_trainee(host, "%s delete cluster --name class-%s-%d || true"
                                % (kwokctl, self.tag, HOSTS.index(host)))
        if self.sshd:
            self.sshd.terminate()
            self.sshd.wait(30)
        for user in self.users.values():
            for pid in user_pids(user):   # processes of this test's own users only
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            subprocess.run(["userdel", "-r", "-f", user], capture_output=True)


def lab_files(home):
    """The lab folder and the lab's state on a trainee host: path, mtime and content of each."""
    found = []
    for top in (home / "gpuop", home / ".cache/gpu-incident-lab", home / ".local/state/gpu-incident-lab"):
        for path in sorted(top.rglob("*")):
            data = path.read_bytes() if path.is_file() and path.stat().st_size < 1 << 20 else b""
            found.append((str(path), path.stat().st_mtime_ns, hashlib.sha256(data).hexdigest()))
    return found


def recap(stdout):
    return {m.group(1): dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2)))
            for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", stdout, re.M)}


def solution(step):
    """A step's solution block from the guide, as printed (folded in <details>)."""
    text = (ROOT / "docs/steps.md").read_text()
    section = text.split('<a id="step-%d"></a>' % step, 1)[1].split('<a id="', 1)[0]
    folded = section.split("<details>", 1)[1].split("</details>", 1)[0]
    return "\n".join(re.findall(r"^%ssh\n(.*?)^%s" % (FENCE, FENCE), folded, re.S | re.M))


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the classroom test creates users and runs sshd: run it as root (CI does)")
    missing = [c for c in ("kwokctl", "kube-apiserver", "kubectl", "etcd", "kwok") if not (BIN / c).exists()]
    if missing:
        pytest.fail("no %s in %s: build the control plane first (make lab)" % (", ".join(missing), BIN),
                    pytrace=False)
    if not os.access(SSHD, os.X_OK):
        pytest.fail("no %s: make test installs openssh-server (toolchain/host-packages); run alone: "
                    "toolchain/host-setup.sh test" % SSHD, pytrace=False)
    cls = Class(tmp_path_factory.mktemp("classroom"))
    try:
        cls.start()
        commands = readme_commands()
        cls.commands = {"setup": commands[0], "grade": commands[1], "teardown_one": commands[2],
                        "teardown_all": commands[3]}
        start = time.monotonic()
        cls.first = cls.playbook(cls.commands["setup"])
        cls.first_seconds = time.monotonic() - start
        cls.again = cls.playbook(cls.commands["setup"])
        cls.check = cls.playbook(cls.commands["setup"] + " --check --diff")
        yield cls
    finally:
        cls.stop()


def test_one_setup_for_the_class_and_a_rerun_that_changes_nothing(classroom):
    first, again = classroom.first, classroom.again
    assert first.returncode == 0, first.stdout[-5000:] + first.stderr[-2000:]
    for host in HOSTS:
        home = classroom.home(host)
        assert re.search(r"%s: ready - kwok-only, cluster class-\w+-\d, 3 nodes Ready, lab folder %s/gpuop; shipped "
                         % (host, home), first.stdout), first.stdout[-3000:]
        for folder in ("etc/containerd/conf.d", "bin", "k8s", "out"):
            assert (home / "gpuop" / folder).is_dir() and not any((home / "gpuop" / folder).iterdir())
    assert again.returncode == 0, again.stdout[-5000:]
    counts = recap(again.stdout)
    assert sorted(counts) == list(HOSTS) and all(c["changed"] == 0 and c["failed"] == 0 for c in counts.values()), counts
    assert again.stdout.count("binaries already there") == 2
    check = classroom.check   # check mode on a ready class: nothing would change
    assert check.returncode == 0 and all(c["changed"] == 0 for c in recap(check.stdout).values()), check.stdout[-3000:]


def test_the_example_inventory_is_a_class_with_the_labs_settings(tmp_path):
    """inventory/classroom.example.yml, copied as docs/classroom.md says, beside the lab's settings."""
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0")
    out = subprocess.run([str(ROOT / ".venv/bin/ansible-inventory"), "-i", "inventory/classroom.example.yml",
                          "--list"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    assert listing["trainees"]["hosts"] == ["trainee-01", "trainee-02", "trainee-03", "trainee-04"]
    hostvars = listing["_meta"]["hostvars"]
    assert hostvars["trainee-02"]["lab_real_node"] is False and hostvars["trainee-01"]["lab_real_node"] is True
    assert "lab_grade_settings" in hostvars["trainee-01"]   # group_vars/all/lab.yml applies
    assert hostvars["trainee-03"]["lab_port_base"] != hostvars["trainee-04"]["lab_port_base"]


def test_binaries_are_the_controllers_byte_for_byte_and_kubectl_runs_there(classroom):
    for host in HOSTS:
        shipped = classroom.home(host) / ".cache/gpu-incident-lab/bin"
        for name in ("kube-apiserver", "kubectl", "kwok", "kwokctl", "etcd"):
            assert hashlib.sha256((shipped / name).read_bytes()).digest() == \
                hashlib.sha256((BIN / name).read_bytes()).digest(), name
            assert (shipped / name).stat().st_uid == pwd.getpwnam(classroom.users[host]).pw_uid


def test_each_trainee_has_a_cluster_of_its_own(classroom):
    servers = set()
    for index, host in enumerate(HOSTS):
        kubeconfig = "~/.kwok/clusters/class-%s-%d/kubeconfig.yaml" % (classroom.tag, index)
        kubectl = "~/.cache/gpu-incident-lab/bin/kubectl --kubeconfig " + kubeconfig
        out = classroom.as_trainee(host, kubectl + """ get nodes -o jsonpath='{range .items[*]}{.metadata.name} Ready={.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}'
""" + kubectl + " config view -o jsonpath='{.clusters[0].cluster.server}'")
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[:3] == ["lab-node-0 Ready=True", "lab-node-1 Ready=True", "lab-node-2 Ready=True"], lines
        servers.add(lines[3])
        procs = "\n".join(lab_processes(classroom.users[host]))
        for component in ("etcd", "kube-apiserver", "kube-scheduler", "kwok"):
            assert component in procs, procs   # running as the trainee, not as the controller's user
    assert len(servers) == 2, servers


def test_the_class_grade_table(classroom):
    """trainee-01 did steps 1-2 as the guide's solutions say; trainee-02 did step 1 with mistake 1."""
    ok = classroom.as_trainee("trainee-01", solution(1) + "\n" + solution(2))
    assert ok.returncode == 0, ok.stderr
    mistake = solution(1).replace('plugins."io.containerd.grpc.v1.cri"', "plugins.io.containerd.grpc.v1.cri")
    assert mistake != solution(1)
    bad = classroom.as_trainee("trainee-02", mistake)
    assert bad.returncode == 0, bad.stderr
    before = {h: lab_files(classroom.home(h)) for h in HOSTS}
    graded = classroom.playbook(classroom.commands["grade"])
    assert graded.returncode != 0 and "trainee-02: a step failed" in graded.stdout, graded.stdout[-4000:]
    assert all(c["changed"] == 0 for c in recap(graded.stdout).values()), graded.stdout[-2000:]
    md = (classroom.reports / "class-report.md").read_text()
    assert md in graded.stdout.replace("\r", "")
    assert "| trainee-01 | kwok-only | PASS | PASS | 2 of 2 |" in md, md
    row = [line for line in md.splitlines() if line.startswith("| trainee-02 |")]
    assert row == ["| trainee-02 | kwok-only | FAIL [1] | FAIL [2] | 0 of 2 |"], md
    first = md.split("First reason of each failure:", 1)[1]
    assert re.search(r"1\. trainee-02, step 1: .*\bio\b", first), first          # mistake 1, by name
    assert "2. trainee-02, step 2: 99-nvidia.toml is missing" in first, first
    suites = {s.get("name"): s for s in ET.parse(classroom.reports / "class-report.xml").getroot()}
    assert sorted(suites) == list(HOSTS)
    assert [c.get("name") for c in suites["trainee-01"].findall("testcase")] == ["step 1", "step 2"]
    assert suites["trainee-01"].get("failures") == "0" and suites["trainee-02"].get("failures") == "2"
    assert "plugins" in suites["trainee-02"].find("testcase[@name='step 1']/failure").get("message")
    after = {h: lab_files(classroom.home(h)) for h in HOSTS}
    assert after == before   # grading wrote nothing on either host


def test_a_host_that_cannot_be_reached_is_a_row_of_its_own(classroom, tmp_path):
    inventory = json.loads(classroom.inventory.read_text())
    hosts = inventory["all"]["children"]["trainees"]["hosts"]
    hosts["trainee-99"] = dict(hosts["trainee-01"], ansible_port=free_port())
    other = classroom.inventory.parent / "with-a-missing-host.yml"
    other.write_text(json.dumps(inventory))
    out = classroom.playbook(classroom.commands["grade"], inventory=other, reports=tmp_path)
    md = (tmp_path / "class-report.md").read_text()
    assert "| trainee-99 | ? | - | - | not graded [" in md and "| trainee-01 | kwok-only | PASS | PASS |" in md, md
    assert out.returncode != 0 and "UNREACHABLE" in out.stdout


def test_a_host_that_fails_is_reported_by_name_and_the_others_go_on(classroom):
    inventory = json.loads(classroom.inventory.read_text())
    hosts = inventory["all"]["children"]["trainees"]["hosts"]
    hosts = {"trainee-01": hosts["trainee-01"],
             # reachable, but its bin folder cannot be made
             "trainee-98": dict(hosts["trainee-02"], lab_bin_dir="/proc/classroom-nowhere/bin"),
             "trainee-99": dict(hosts["trainee-01"], ansible_port=free_port())}   # nobody listens
    inventory["all"]["children"]["trainees"]["hosts"] = hosts
    other = classroom.inventory.parent / "with-failing-hosts.yml"
    other.write_text(json.dumps(inventory))
    out = classroom.playbook(classroom.commands["setup"], inventory=other)
    assert out.returncode != 0, out.stdout[-3000:]
    assert re.search(r"^trainee-01: ready - kwok-only, cluster class-\w+-0, 3 nodes Ready", out.stdout, re.M)
    assert re.search(r'^trainee-98: FAILED at "Classroom binaries \| Create the bin folder" - ', out.stdout, re.M), \
        out.stdout[-3000:]
    assert re.search(r"^trainee-99: UNREACHABLE - not reached", out.stdout, re.M)
    assert "not ready: trainee-98, trainee-99" in out.stdout
    assert recap(out.stdout)["trainee-01"]["changed"] == 0


def test_a_controller_without_binaries_takes_them_from_a_trainee_host(classroom, tmp_path):
    """-e classroom_binaries_from=HOST: fetched, checked for the pinned versions, never built."""
    cache = tmp_path / "cache"   # the controller's cache, empty
    out = classroom.playbook(classroom.commands["setup"] + " -e classroom_binaries_from=trainee-01"
                             " -e control_plane_binaries_build_timeout=1",   # a build would fail at once
                             env={"XDG_CACHE_HOME": str(cache)})
    assert out.returncode == 0, out.stdout[-4000:]
    assert "Building" not in out.stdout and "Fetch them from trainee-01" in out.stdout
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd", "kwok", "kwokctl"):
        taken = cache / "gpu-incident-lab/bin" / name
        assert hashlib.sha256(taken.read_bytes()).digest() == hashlib.sha256((BIN / name).read_bytes()).digest()
    assert not (cache / "gpu-incident-lab/bin/.from-trainee-01").exists()
    assert recap(out.stdout)["trainee-02"]["changed"] == 0   # same binaries there: nothing shipped


def test_teardown_one_host_then_the_class(classroom):
    one = classroom.playbook(classroom.commands["teardown_one"])
    assert one.returncode == 0, one.stdout[-3000:]
    assert sorted(recap(one.stdout)) == ["trainee-01"]
    wait_for("trainee-01's processes to end", lambda: lab_processes(classroom.users["trainee-01"]) == [], 30)
    assert lab_processes(classroom.users["trainee-02"]) != []
    everyone = classroom.playbook(classroom.commands["teardown_all"])
    assert everyone.returncode == 0, everyone.stdout[-3000:]
    for host in HOSTS:
        wait_for("%s's processes to end" % host, lambda: lab_processes(classroom.users[host]) == [], 30)


class RootClass(Class):
    """One trainee host reached as root over SSH (the test's sshd, a key in a root-only folder
    under /run): the host where the real lab-node-1 can run. Its lab folder, binaries and node
    state are folders of this run, so nothing of the controller's own lab is touched; the
    kubelet and crictl are shipped like the control plane."""
    HOST = "trainee-root"

    def __init__(self, tmp):
        super().__init__(tmp)
        self.users = {self.HOST: "root"}
        self.keys = pathlib.Path("/run/gpu-incident-lab-class-%s" % self.tag)
        self.state = tmp / "trainee-state"
        self.cluster = "class-%s-real" % self.tag

    def start(self):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.dir / "host")], check=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.dir / "client")], check=True)
        self.keys.mkdir(mode=0o700)
        shutil.copy(self.dir / "client.pub", self.keys / "authorized_keys")
        (self.keys / "authorized_keys").chmod(0o600)
        self.start_sshd(self.keys / "authorized_keys", "PermitRootLogin prohibit-password\n")
        self.inventory.parent.mkdir()
        (self.inventory.parent / "group_vars").mkdir()
        (self.inventory.parent / "group_vars" / "all").symlink_to(ROOT / "inventory/group_vars/all")
        host = {"ansible_host": "127.0.0.1", "ansible_port": self.port, "ansible_user": "root",
                "ansible_ssh_private_key_file": str(self.dir / "client"),
                "ansible_ssh_common_args": "-o UserKnownHostsFile=%s -o StrictHostKeyChecking=no"
                                           % (self.dir / "known_hosts"),
                "lab_real_node": True, "lab_cluster_name": self.cluster,
                "lab_root": str(self.state / "gpuop"), "lab_bin_dir": str(self.state / "bin"),
                "lab_state_dir": str(self.state),
                # root's home is the machine's: the cluster's folder is the test's too
                "kwok_cluster_workdir": str(self.state / ".kwok"),
                "lab_port_base": 26000 + (self.port % 400) * 6}   # apart from the class fixture's 21000-25799
        self.inventory.write_text(json.dumps({"all": {"children": {"trainees": {"hosts": {self.HOST: host}}}}}))

    def stop(self):
        kwokctl = self.state / "bin/kwokctl"
        if (self.state / "node").exists():
            subprocess.run([str(ROOT / ".venv/bin/ansible-playbook"), "-e", "lab_cluster_name=" + self.cluster,
                            "-e", "lab_bin_dir=%s" % (self.state / "bin"), "-e", "lab_root=%s" % (self.state / "gpuop"),
                            "-e", "lab_state_dir=%s" % self.state, "-e", "kwok_cluster_workdir=%s" % (self.state / ".kwok"),
                            "playbooks/teardown.yml"], cwd=ROOT, capture_output=True, timeout=300)
        if kwokctl.exists():
            subprocess.run([str(kwokctl), "delete", "cluster", "--name", self.cluster], capture_output=True,
                           env=dict(os.environ, KWOK_WORKDIR=str(self.state / ".kwok")))
        if self.sshd:
            self.sshd.terminate()
            self.sshd.wait(30)
        shutil.rmtree(self.keys, ignore_errors=True)


def node_processes(state):
    """Processes whose command line names the trainee's node state folder (containerd, the
    kubelet, shims, the forwarder)."""
    out = subprocess.run(["pgrep", "-a", "-f", str(state / "node")], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if "pgrep" not in line]


@pytest.fixture(scope="module")
def root_classroom(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the real node on a trainee host needs root there (and sshd here): run as root (CI does)")
    if not os.access(SSHD, os.X_OK):
        pytest.skip("no sshd (the classroom fixture installs it)")
    cls = RootClass(tmp_path_factory.mktemp("rootclass"))
    try:
        cls.start()
        cls.commands = readme_commands()
        cls.first = cls.playbook(cls.commands[0])
        cls.again = cls.playbook(cls.commands[0])
        yield cls
    finally:
        cls.stop()


def test_a_root_trainee_gets_the_real_node_over_ssh(root_classroom):
    """The same instructor command, on a host reached as root over SSH with lab_real_node: the
    kubelet and crictl are shipped with the control plane, lab-node-1 is a real kubelet on a
    real containerd there, the rerun changes nothing, teardown leaves nothing of the node."""
    cls, host = root_classroom, RootClass.HOST
    first = cls.first
    assert first.returncode == 0, first.stdout[-5000:] + first.stderr[-2000:]
    line = re.search(r"^%s: ready - (.*)$" % host, first.stdout, re.M)
    assert line and line.group(1).startswith("real node, cluster %s, 3 nodes Ready" % cls.cluster), first.stdout[-3000:]
    assert "kubelet" in line.group(1) and "crictl" in line.group(1), line.group(1)   # shipped
    for name in ("kubelet", "crictl", "kube-apiserver"):
        assert hashlib.sha256((cls.state / "bin" / name).read_bytes()).digest() == \
            hashlib.sha256((BIN / name).read_bytes()).digest(), name
    kubeconfig = cls.state / ".kwok/clusters" / cls.cluster / "kubeconfig.yaml"
    node = json.loads(subprocess.run([str(cls.state / "bin/kubectl"), "--kubeconfig", str(kubeconfig), "get", "node",
                                      "lab-node-1", "-o", "json"], capture_output=True, text=True, check=True).stdout)
    info = node["status"]["nodeInfo"]
    assert info["containerRuntimeVersion"].startswith("containerd://"), info   # kwok nodes print no runtime
    assert "kwok.x-k8s.io/node" not in (node["metadata"].get("annotations") or {}), node["metadata"]
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
    assert ready["status"] == "True" and ready["reason"] == "KubeletReady", ready
    assert any("kubelet" in line for line in node_processes(cls.state)), node_processes(cls.state)
    again = cls.again
    assert again.returncode == 0 and recap(again.stdout)[host]["changed"] == 0, again.stdout[-4000:]
    assert "%s: ready - real node" % host in again.stdout and "binaries already there" in again.stdout
    down = cls.playbook(cls.commands[3])
    assert down.returncode == 0, down.stdout[-3000:]
    wait_for("the real node's processes to end", lambda: node_processes(cls.state) == [], 60)
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    # the node's id, as roles/real_node/vars/main.yml derives it from the cluster and its state folder
    node_id = hashlib.sha1(("%s|%s" % (cls.cluster, os.path.realpath(str(cls.state / "node")))).encode()).hexdigest()[:8]
    assert "gil-" + node_id not in netns, netns
