#!/usr/bin/env python3
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real node's records of itself, for real-node.sh (which keeps to starting and stopping).

    node_state.py boot-record STATE MODE MAIN_CONFIG CONTAINERD_VERSION VIEW_FLAGS
        write STATE/boot.json: how containerd was last started (incident | restart | reboot),
        the sha256 of the main config it started from, the node's view flags, its version
    node_state.py boot-key STATE
        one line "MODE SHA VIEW VERSION" from STATE/boot.json (empty when there is none):
        converge compares it with what the lab asks for now
    node_state.py status STATE ACTIONS NODE_IP NETNS HOLDER CONTAINERD KUBELET FORWARDER [CRI_INFO_FILE CRI_ERR_FILE]
        the JSON real-node.sh prints: what runs (1 or empty per process), the runtimes the
        running containerd has (from `crictl info`), its errors, how a process that ended ended
        (STATE/NAME.exit, written by supervise.sh), what this run did (ACTIONS, \\x1f-separated)
    node_state.py json-str TEXT
        TEXT as a JSON string (real-node.sh's error line)
    node_state.py cgroup-pids DIR
        every pid in the cgroup tree under DIR, one a line, sorted: what real-node.sh kills. A
        cgroup removed while the tree is read (runc deleting a killed container's, the kubelet its
        Pods') is skipped - it held no process, a cgroup is removed only empty - where `find -exec
        cat` failed the whole read (issue 47); any other error is named, status 1
"""
import errno
import hashlib
import json
import os
import sys
import time

CONTAINERD_ERRORS = 5


def boot_record(state, mode, main, version, view):
    sha = None
    if os.path.exists(main):
        with open(main, "rb") as handle:
            sha = hashlib.sha256(handle.read()).hexdigest()
    record = {"mode": mode, "main_config_sha256": sha, "view": view, "containerd": version,
              "started": int(time.time())}
    with open(os.path.join(state, "boot.json.tmp"), "w") as handle:
        json.dump(record, handle)
    os.replace(os.path.join(state, "boot.json.tmp"), os.path.join(state, "boot.json"))


def read_boot(state):
    try:
        with open(os.path.join(state, "boot.json")) as handle:
            boot = json.load(handle)
    except (OSError, ValueError):
        return {}
    return boot if isinstance(boot, dict) else {}


def boot_key(state):
    boot = read_boot(state)
    if not boot:
        return ""
    return "%s %s %s %s" % (boot.get("mode", ""), boot.get("main_config_sha256") or "", boot.get("view", ""),
                            boot.get("containerd", ""))


def read_text(path):
    try:
        with open(path, errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def containerd_errors(log_text):
    """The errors of containerd's log that say why CRI or a plugin did not load (the last few)."""
    errs = [line.strip() for line in log_text.splitlines()
            if "level=error" in line or "level=fatal" in line
            or ("failed to load plugin" in line and ".cri" in line)]
    return errs[-CONTAINERD_ERRORS:]


def ended(state, name):
    """How a process of the node ended, from its supervisor's record (None while none)."""
    text = read_text(os.path.join(state, name + ".exit")).strip()
    if not text.isdigit():
        return None
    status = int(text)
    if status > 128:
        return {"exit_status": status, "signal": status - 128}
    return {"exit_status": status}


def status(state, actions, node_ip, netns, holder, containerd, kubelet, forwarder, cri_info="", cri_err=""):
    out = {"holder": bool(holder), "containerd": bool(containerd), "kubelet": bool(kubelet),
           "forwarder": bool(forwarder), "boot": read_boot(state), "node_ip": node_ip, "netns": netns,
           "actions": [a for a in actions.split("\x1f") if a], "changed": bool(actions)}
    running = read_text(cri_info) if cri_info else ""
    if running.strip():
        try:
            cfg = json.loads(running).get("config", {})
            out["runtimes_running"] = sorted(cfg.get("containerd", {}).get("runtimes", {}))
            out["default_runtime"] = cfg.get("containerd", {}).get("defaultRuntimeName")
        except (ValueError, AttributeError):
            out["cri_error"] = running.strip()[:500]
    err = read_text(cri_err).strip() if cri_err else ""
    if err:
        out["cri_error"] = err[:500]
    out["containerd_errors"] = containerd_errors(read_text(os.path.join(state, "containerd.log")))
    for name, running_now in (("containerd", containerd), ("kubelet", kubelet)):
        how = ended(state, name)
        if how and not running_now:
            out.setdefault("ended", {})[name] = how
    return out


# what reading a cgroup that is being removed, or is gone, answers (cgroup v1 and v2)
GONE = (errno.ENOENT, errno.ENODEV, errno.ESTALE)


def cgroup_pids(top):
    """The pids in every cgroup.procs under TOP (TOP gone: none)."""
    pids = set()

    def skip_gone(err):
        if err.errno not in GONE:
            raise err
    for here, _dirs, _files in os.walk(top, onerror=skip_gone):
        try:
            with open(os.path.join(here, "cgroup.procs")) as handle:
                text = handle.read()
        except OSError as err:
            skip_gone(err)
            continue
        pids.update(int(word) for word in text.split())
    return sorted(pids)


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "boot-record" and len(argv) == 7:
        boot_record(*argv[2:7])
    elif cmd == "boot-key" and len(argv) == 3:
        print(boot_key(argv[2]))
    elif cmd == "status" and len(argv) in (10, 12):
        print(json.dumps(status(*argv[2:])))
    elif cmd == "json-str" and len(argv) == 3:
        print(json.dumps(argv[2]))
    elif cmd == "cgroup-pids" and len(argv) == 3:
        try:
            pids = cgroup_pids(argv[2])
        except OSError as err:
            sys.stderr.write("node_state.py cgroup-pids: reading %s failed: %s\n" % (err.filename or argv[2], err.strerror))
            return 1
        print("\n".join(str(pid) for pid in pids))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
