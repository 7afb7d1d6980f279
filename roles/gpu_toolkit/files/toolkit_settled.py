#!/usr/bin/env python3
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Has NVIDIA's installer, restart mode signal, settled on the lab's real node? One look, no wait.

    toolkit_settled.py KUBECTL KUBECONFIG NAMESPACE SELECTOR NODE REAL_NODE_SH STATE RUNTIME

Prints {"settled": true|false, "why": "..."} and exits 0 (the role's `until` repeats it, bounded).

Why a look at both sides at once: in mode signal the installer's rollout is not one event.
containerd ends on its SIGHUP and the node's supervisor starts it again; around that restart the
installer can receive a signal itself - SIGPIPE from its log pipe while containerd is down, or its
own SIGHUP when it read pid 0 from the socket (docs/toolkit.md) - and then either exits early
(the DaemonSet starts it again: it writes and signals once more) or runs its cleanup (its drop-in
removed, containerd signalled again, loading no NVIDIA runtime). The node is settled only when, in
one look: the installer's container runs with "Waiting for signal" as its last line, containerd
runs with RUNTIME loaded, and the same container (its ID, its restart count, its last line) is
still there after containerd was read - from then on nothing writes, so nothing signals.
"""
import json
import subprocess
import sys


def look(kubectl, kubeconfig, namespace, selector, node):
    out = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "-n", namespace, "get", "pods", "-l", selector,
                          "--field-selector", "spec.nodeName=" + node, "-o", "json"],
                         capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        return None, "kubectl get pods: " + (out.stderr.strip() or "status %d" % out.returncode)
    pods = json.loads(out.stdout)["items"]
    if len(pods) != 1:
        return None, "%d installer Pods on %s" % (len(pods), node)
    pod = pods[0]
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    if not statuses or "running" not in (statuses[0].get("state") or {}):
        return None, "the installer's container is not running (%s)" % json.dumps(statuses[0].get("state") if statuses else None)
    log = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "-n", namespace, "logs", pod["metadata"]["name"],
                          "--tail=5"], capture_output=True, text=True, timeout=30)
    if log.returncode != 0:
        return None, "the installer's log cannot be read (containerd restarting?): " + log.stderr.strip()[:200]
    lines = [line for line in log.stdout.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return (statuses[0].get("containerID"), statuses[0].get("restartCount"), last), None


def main(argv):
    if len(argv) != 8:
        print(json.dumps({"settled": False, "why": "usage: toolkit_settled.py KUBECTL KUBECONFIG NAMESPACE SELECTOR "
                                                   "NODE REAL_NODE_SH STATE RUNTIME"}))
        return 2
    kubectl, kubeconfig, namespace, selector, node, real_node, state, runtime = argv
    first, why = look(kubectl, kubeconfig, namespace, selector, node)
    if first is None:
        return say(False, why)
    if 'msg="Waiting for signal"' not in first[2]:
        return say(False, "the installer's last line is not 'Waiting for signal': %s" % first[2][:200])
    status = subprocess.run([real_node, "status", state], capture_output=True, text=True, timeout=60)
    try:
        node_status = json.loads(status.stdout)
    except ValueError:
        return say(False, "real-node.sh status: %s" % (status.stderr.strip() or status.stdout.strip())[:200])
    running = node_status.get("runtimes_running") or []
    if not node_status.get("containerd") or runtime not in running:
        return say(False, "containerd runs %s, not yet %s (its supervisor restarts it after the SIGHUP)" % (
            ", ".join(running) or "nothing (down)", runtime))
    again, why = look(kubectl, kubeconfig, namespace, selector, node)
    if again != first:
        return say(False, "the installer changed while containerd was read: %s" % (why or "%s -> %s" % (first, again)))
    return say(True, "the installer waits for its signal (container %s, restarts %s); containerd runs %s" % (
        (first[0] or "")[-12:], first[1], ", ".join(running)))


def say(settled, why):
    print(json.dumps({"settled": settled, "why": why}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
