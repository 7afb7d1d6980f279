#!/usr/bin/env python3
"""What a lab on this machine looks like, to prove the tests left it as they found it.

    tools/lab_snapshot.py save FILE      record the lab under the default names (or its absence)
    tools/lab_snapshot.py compare FILE   the same lab, again: exit 1 naming every difference
    tools/lab_snapshot.py require-real   exit 1 unless that lab runs whole: every node Ready and
                                         lab-node-1 real (its containerd, kubelet, namespace) -
                                         .ci/run checks it before the tests run beside it

`make test` saves a snapshot first and compares it last, so a run of the test suite beside a
user's lab (README: the tests may run beside a lab) fails when any test read-write touched it.
A lab is its cluster name under its home: the default one is `gpu-incident-lab` under $HOME,
its state folder `${XDG_STATE_HOME:-~/.local/state}/gpu-incident-lab/gpu-incident-lab`,
its lab folder ~/gpuop (LAB_ROOT, LAB_CLUSTER_NAME override them). What is compared:

- the lab folder, byte for byte (every file's sha256 and mode, every link's target);
- the state folder's reports and records (grade report, node facts, drill, diagnosis), byte
  for byte, and the real node's record of itself (node.env, boot.json, pid files);
- the processes: the cluster's components (command lines naming its folder) and the real
  node's holder, containerd, kubelet and forwarder - the same pids, still alive;
- the real node's network namespace and the mounts inside its mount namespace;
- the nodes the API server lists, with their Ready condition.

Logs, containerd's and the kubelet's own folders change while a lab runs; they are not compared.
Where no lab runs, the snapshot says so, and compare checks that none appeared (a test that
created the default lab, or its state folder, fails it too).
"""
import hashlib
import json
import os
import subprocess
import sys

HOME = os.path.expanduser("~")
CLUSTER = os.environ.get("LAB_CLUSTER_NAME", "gpu-incident-lab")
LAB_ROOT = os.environ.get("LAB_ROOT", os.path.join(HOME, "gpuop"))
STATE = os.path.join(os.environ.get("XDG_STATE_HOME") or os.path.join(HOME, ".local/state"),
                     "gpu-incident-lab", CLUSTER)
CLUSTER_DIR = os.path.join(HOME, ".kwok", "clusters", CLUSTER)
KUBECTL = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(HOME, ".cache"),
                       "gpu-incident-lab", "bin", "kubectl")
RECORDS = ("grade-report.json", "grade-report.xml", "node-facts.json", "drill.json", "diagnosis.json")
NODE_RECORDS = ("node.env", "boot.json", "holder.pid", "containerd.pid", "kubelet.pid", "forward.pid")


def digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def tree(root):
    """Every file and link under root: relative path -> sha256 and mode, or the link's target."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = "link -> " + os.readlink(path)
            else:
                out[rel] = "%s %o" % (digest(path), os.stat(path).st_mode & 0o7777)
    return out


def alive(pid):
    try:
        with open("/proc/%s/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None


def cluster_processes():
    """The cluster's components: every process whose command line names its folder."""
    out = {}
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        line = cmdline(pid)
        if line and CLUSTER_DIR + "/" in line and "lab_snapshot" not in line:
            out[pid] = line
    return out


def node_side():
    node = os.path.join(STATE, "node")
    out = {"records": {}, "processes": {}, "netns": None, "mounts": None}
    for name in NODE_RECORDS:
        path = os.path.join(node, name)
        if os.path.exists(path):
            out["records"][name] = digest(path)
            if name.endswith(".pid"):
                with open(path) as handle:
                    pid = handle.read().strip()
                out["processes"][name] = {"pid": pid, "alive": alive(pid), "cmdline": cmdline(pid)}
    env = {}
    if os.path.exists(os.path.join(node, "node.env")):
        with open(os.path.join(node, "node.env")) as handle:
            env = dict(line.rstrip("\n").split("=", 1) for line in handle if "=" in line and not line.startswith("#"))
    if env.get("CLUSTER_ID"):
        out["netns"] = os.path.exists("/run/netns/gil-" + env["CLUSTER_ID"])
    holder = out["processes"].get("holder.pid", {})
    if holder.get("alive"):
        with open("/proc/%s/mountinfo" % holder["pid"]) as handle:   # mount point, root, fs type, source
            out["mounts"] = sorted(" ".join(f[4:5] + f[3:4] + f[f.index("-") + 1:f.index("-") + 3])
                                   for f in (line.split() for line in handle))
    return out


def nodes():
    kubeconfig = os.path.join(CLUSTER_DIR, "kubeconfig.yaml")
    if not (os.path.exists(kubeconfig) and os.access(KUBECTL, os.X_OK)):
        return None
    out = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, "get", "nodes", "-o", "json"],
                         capture_output=True, text=True, timeout=60, check=False)
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-300:]}
    result = {}
    for item in json.loads(out.stdout)["items"]:
        ready = [c["status"] for c in item["status"].get("conditions", []) if c["type"] == "Ready"]
        result[item["metadata"]["name"]] = ready[0] if ready else None
    return result


def snapshot():
    exists = {"lab folder": os.path.isdir(LAB_ROOT), "state folder": os.path.isdir(STATE),
              "cluster folder": os.path.isdir(CLUSTER_DIR)}
    snap = {"where": {"lab folder": LAB_ROOT, "state folder": STATE, "cluster folder": CLUSTER_DIR},
            "exists": exists}
    if exists["lab folder"]:
        snap["lab folder"] = tree(LAB_ROOT)
    if exists["state folder"]:
        snap["records"] = {n: digest(os.path.join(STATE, n)) for n in RECORDS if os.path.exists(os.path.join(STATE, n))}
        snap["real node"] = node_side()
    if exists["cluster folder"]:
        snap["cluster processes"] = cluster_processes()
        snap["nodes"] = nodes()
    return snap


def differences(before, after, path=""):
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in sorted(set(before) | set(after), key=str):
            where = "%s/%s" % (path, key) if path else str(key)
            if key not in after:
                out.append("%s: gone (was %s)" % (where, json.dumps(before[key])[:200]))
            elif key not in before:
                out.append("%s: appeared (%s)" % (where, json.dumps(after[key])[:200]))
            else:
                out += differences(before[key], after[key], where)
        return out
    if before != after:
        return ["%s: was %s, now %s" % (path, json.dumps(before)[:200], json.dumps(after)[:200])]
    return []


def missing_for_real(snap):
    """What keeps this lab from being the whole one (every node Ready, lab-node-1 real)."""
    missing = [where for where, there in snap["exists"].items() if not there]
    listed = snap.get("nodes") or {}
    if "error" in listed:
        missing.append("the API server: %s" % listed["error"])
    else:
        missing += ["node %s Ready (it is %s)" % (n, r) for n, r in sorted(listed.items()) if r != "True"]
        missing += ["node %s" % n for n in ("lab-node-0", "lab-node-1", "lab-node-2") if n not in listed]
    node = snap.get("real node") or {"processes": {}}
    for name in ("containerd.pid", "kubelet.pid", "holder.pid"):
        if not (node["processes"].get(name) or {}).get("alive"):
            missing.append("lab-node-1's %s process (the lab fell back to kwok?)" % name.split(".")[0])
    if not node.get("netns"):
        missing.append("lab-node-1's network namespace")
    return missing


def main(argv):
    if len(argv) == 2 and argv[1] == "require-real":
        missing = missing_for_real(snapshot())
        if missing:
            print("lab_snapshot: the lab %s is not whole: no %s" % (CLUSTER, "; no ".join(missing)))
            return 1
        print("lab_snapshot: the lab %s runs whole: every node Ready, lab-node-1 real" % CLUSTER)
        return 0
    if len(argv) != 3 or argv[1] not in ("save", "compare"):
        sys.stderr.write("usage: lab_snapshot.py save|compare FILE | require-real\n")
        return 2
    now = snapshot()
    if argv[1] == "save":
        with open(argv[2], "w") as handle:
            json.dump(now, handle, indent=1, sort_keys=True)
        running = [k for k, v in now["exists"].items() if v]
        print("lab_snapshot: %s" % ("the lab %s (%s) recorded in %s" % (CLUSTER, ", ".join(running), argv[2])
                                     if running else "no lab %s on this machine; recorded that in %s" % (CLUSTER, argv[2])))
        return 0
    try:
        with open(argv[2]) as handle:
            before = json.load(handle)
    except (OSError, ValueError) as err:
        sys.stderr.write("lab_snapshot: no snapshot to compare with in %s (%s): run `save` first\n" % (argv[2], err))
        return 2
    diff = differences(before, now)
    if diff:
        print("lab_snapshot: the lab %s is not as the tests found it:\n  %s" % (CLUSTER, "\n  ".join(diff)))
        return 1
    print("lab_snapshot: the lab %s is as the tests found it (%s)" % (
        CLUSTER, "lab folder, records, processes, namespace, mounts and nodes the same"
        if any(before["exists"].values()) else "none, and none appeared"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
