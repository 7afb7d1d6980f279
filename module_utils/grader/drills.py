# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drills: a diagnosis drill's answer (drills/NAME.txt: LAYER= and EVIDENCE=) against the
drill in place and the live diagnosis, and the fix after the real node's reboot against the
running daemon and the cluster.
"""

import json
import os
import subprocess

from ansible.module_utils.diagnosis import layers as gd
from ansible.module_utils.grader.base import GraderBase, Result, read_kv
from ansible.module_utils.kube.client import KubeError


def running_runtimes(crictl):
    """The runtimes of the RUNNING containerd, from `crictl info` (the command may be a wrapper
    that runs it on the node): (sorted names, None) or (None, what went wrong)."""
    try:
        proc = subprocess.run([crictl, "info"], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    if proc.returncode != 0:
        return None, (proc.stderr or proc.stdout).strip().splitlines()[-1:][0][:300] if (
            proc.stderr or proc.stdout).strip() else "rc %d" % proc.returncode
    try:
        config = json.loads(proc.stdout).get("config") or {}
    except ValueError:
        return None, "crictl info printed no JSON"
    return sorted(((config.get("containerd") or {}).get("runtimes") or {})), None


class Drills(GraderBase):
    """The drill checks (mixed into Grader)."""

    # Words an answer's EVIDENCE names when it points at the right thing, per layer of
    # gpu_diagnosis's LAYERS (a test holds the keys to that list).
    DRILL_WORDS = {
        "driver": ["cuda.driver", "driver label", "driver_ok", "driver version", "driver-version",
                   "nvidia-smi", "kernel", "xid", "nvrm"],
        "container-runtime": ["runtimes_loaded", "runtimes_running", "restart_pending", "crictl",
                              "config dump", "handler", "runtime", "cdi"],
        "device-plugin": ["device-plugin", "device plugin", "device-plugins", "socket",
                          "daemonset", "plugin pod", "invalid mig configuration", "mig strategy",
                          "mig_strategy"],
        "node-advertisement": ["capacity", "allocatable", "node status", "advertis",
                               "mig.config.state", "mig-parted"],
        "scheduling": ["podscheduled", "insufficient", "taint", "toleration", "affinity",
                       "unschedulable", "request", "scheduler"],
        "workload": ["crashloop", "restart", "exit code", "logs", "phase"],
    }

    # Words the EVIDENCE of a drill must name where its layer's words are not enough to tell it:
    # both drills below cut the container-runtime layer, each with a cause the answer must name -
    # containerd 1.6 applies no CDI device (dra-cdi-ignored: the claim's devices are CDI ids), NVIDIA's
    # installer wrote and did not restart containerd (toolkit-no-restart: its RUNTIME_RESTART_MODE,
    # its own "Skipping restart", the restart the running daemon waits for).
    DRILL_EVIDENCE = {
        "dra-cdi-ignored": ["cdi", "enablecdi", "enable_cdi", "containerd 1.6"],
        "toolkit-no-restart": ["restart-mode", "restart_mode", "skipping restart", "skipped the restart",
                               "not restarted", "never restarted", "did not restart", "didn't restart",
                               "no restart", "without restart", "restart pending", "restart_pending",
                               "restartpending"],
    }

    def reboot_fix(self, node, crictl):
        """The fix after the real reboot: the node Ready, runc and nvidia in the RUNNING daemon
        (crictl info on the node, not a file), and gpu-lab/runtime-check - runtimeClassName
        nvidia, on the node - running: its sandbox started through the nvidia runtime.

        What the trainee must have understood: the incident surfaced at the reboot because
        the files had never been loaded; the fix is proven by what the restarted daemon holds
        and a Pod that starts through the handler - not by the files on disk."""
        r = Result()
        if not node:
            r.fail("this lab has no real node (lab_real_node is false, or the machine could not "
                   "run one): the reboot drill needs it - run `ansible-playbook lab.yml`")
            return r
        if not self.need_cluster(r):
            return r
        obj = self.read("/api/v1/nodes/" + node)
        ready = None
        for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Ready":
                ready = cond.get("status")
        if ready != "True":
            r.fail("node %s is not Ready (Ready=%s): the kubelet cannot reach a CRI that "
                   "answers - read %s's containerd log, fix the config, then restart containerd "
                   "(`ansible-playbook playbooks/reboot.yml`)" % (node, ready, node))
        running, problem = running_runtimes(crictl)
        if problem:
            r.fail("crictl info on %s failed (%s): containerd's CRI plugin is not running" % (
                node, problem))
        else:
            for want in ("runc", "nvidia"):
                if want not in running:
                    r.fail("the running containerd on %s has no %r runtime (crictl info lists %s):"
                           " the files on disk are not what the daemon loaded - restart it after "
                           "fixing them" % (node, want, ", ".join(running) or "none"))
        pod = self.read("/api/v1/namespaces/gpu-lab/pods/runtime-check")
        if pod is None:
            r.fail("no Pod gpu-lab/runtime-check: create it (runtimeClassName: nvidia, nodeName %s, "
                   "image gpu-incident-lab.local/busybox:1.35) as the guide shows" % node)
            return r
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if spec.get("runtimeClassName") != "nvidia":
            r.fail("gpu-lab/runtime-check has runtimeClassName %r; it must be nvidia (the handler "
                   "under test)" % spec.get("runtimeClassName"))
        if spec.get("nodeName") != node:
            r.fail("gpu-lab/runtime-check runs on %r, not on %s" % (spec.get("nodeName"), node))
        if status.get("phase") not in ("Running", "Succeeded"):
            waiting = [((c.get("state") or {}).get("waiting") or {}).get("message")
                       for c in status.get("containerStatuses") or []]
            r.fail("gpu-lab/runtime-check is %s%s: its sandbox did not start through the nvidia "
                   "runtime" % (status.get("phase"), (" (" + "; ".join(w for w in waiting if w) + ")")
                                if any(waiting) else ""))
        return r

    def drill(self, name, state_file, node_facts_file=None):
        """A diagnosis drill: <lab_root>/drills/NAME.txt holds LAYER= (one of gpu_diagnosis's
        layers) and EVIDENCE=; the layer must be the drill's broken one (state_file, from
        playbooks/drill.yml), the evidence must name what shows that break, and the live
        diagnosis must still show it.

        What the trainee must have understood: the path of a GPU Pod is judged bottom-up
        (driver -> container runtime -> device plugin -> node advertisement -> scheduling ->
        workload) and the first broken layer is the answer, named with what was read."""
        r = Result()
        try:
            with open(state_file, encoding="utf-8") as handle:
                state = json.load(handle)
            if not isinstance(state, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            r.fail("no drill is in place (%s: %s): run `ansible-playbook playbooks/drill.yml "
                   "-e drill=%s` first" % (state_file, getattr(exc, "strerror", None) or exc, name))
            return r
        if state.get("drill") != name:
            in_place = state.get("drill") or "none"
            r.fail("drill %s is not the one in place (in place: %s); run `ansible-playbook "
                   "playbooks/drill.yml -e drill=%s` first" % (name, in_place, name))
            return r
        answer = read_kv(self.path("drills", name + ".txt"), ["LAYER", "EVIDENCE"], r,
                         "drills/%s.txt" % name)
        if answer is None:
            r.note("write two lines: LAYER=<one of %s> and EVIDENCE=<what you read, where, and "
                   "what it showed>" % ", ".join(gd.LAYERS))
            return r
        layer = answer["LAYER"].strip().lower()
        if layer not in gd.LAYERS:
            r.fail("LAYER=%s is not a layer; the layers, bottom-up: %s"
                   % (answer["LAYER"], ", ".join(gd.LAYERS)))
        elif layer != state.get("layer"):
            below = gd.LAYERS.index(layer) > gd.LAYERS.index(state.get("layer") or "workload")
            r.fail("LAYER=%s is not where the path is cut%s" % (
                layer, " - a lower layer is already broken; judge bottom-up and stop at the "
                "first broken one" if below else " - that layer is fine here; look at the "
                "evidence of each layer again"))
        evidence = answer["EVIDENCE"].strip()
        words = self.DRILL_EVIDENCE.get(name) or self.DRILL_WORDS.get(state.get("layer"), [])
        if len(evidence.split()) < 3:
            r.fail("EVIDENCE is empty or too short: say what you read (API field, command) and "
                   "what it showed")
        elif not any(w in evidence.lower() for w in words):
            r.fail("EVIDENCE does not name what shows the break (one of: %s)%s" % (
                ", ".join(words), " - the layer alone does not tell this drill: name its cause"
                if name in self.DRILL_EVIDENCE else ""))
        if self.need_cluster(r):
            facts = None
            if node_facts_file and os.path.isfile(node_facts_file):
                with open(node_facts_file, encoding="utf-8") as handle:
                    facts = json.load(handle)
            namespace, pod = (state.get("pod") or "gpu-drill/cuda-drill").split("/", 1)
            try:
                live = gd.Diagnosis(self.api(), node_facts=facts).run(namespace, pod)
            except (gd.DiagnoseError, KubeError) as exc:
                r.fail("the drill Pod cannot be diagnosed: %s" % getattr(exc, "message", exc))
                return r
            if live["first_broken"] != state.get("layer"):
                r.fail("the live cluster no longer shows this drill (gpu_diagnose names %s); "
                       "run `ansible-playbook playbooks/drill.yml -e drill=%s` again"
                       % (live["first_broken"] or "no broken layer", name))
        return r
