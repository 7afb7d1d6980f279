# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One definition of "step N is right": the checks the grader and Molecule's
verify both run.

Each check reads the lab folder and, for steps 5-8, the live cluster, and
returns reasons (empty = passed) and advice (never fails a step). Nothing is
written to the lab folder or the cluster; step 4 runs the trainee's script
with a fake containerd in a temporary folder, as the original grader does.
Values in the reports are compared with what the trainee's own files and the
live cluster say, not with the spec's example numbers.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile

from ansible.module_utils.lab_yaml import HAS_YAML, YAML_IMPORT_ERROR, yaml  # noqa: F401 (re-exported)

from ansible.module_utils import containerd_loader as cc
from ansible.module_utils.gpu_diagnosis import layers as gd
from ansible.module_utils import rollout as ro
from ansible.module_utils import device_plugin_sharing as ts
from ansible.module_utils.lab_kube import KubeError, client as kube_client

CRI = ("plugins", cc.CRI_V2, "containerd")
MERGE_KEYS = ["MAIN_RUNTIMES", "DROPIN_RUNTIMES", "CONFLICT", "CONFLICT_TABLE", "LOADED_RUNTIMES"]

MISTAKE_1 = ("common mistake 1 (unquoted dotted table name): write the plugin name in double "
             "quotes, [plugins.\"io.containerd.grpc.v1.cri\"...], so it stays one key")
MISTAKE_2 = ("common mistake 2 (data.any written as a YAML mapping): ConfigMap data values are "
             "strings; write `any: |-` and indent the config below it")
MISTAKE_3 = ("common mistake 3 (new spec pushed before all Pods were Ready): delete the "
             "DaemonSet, apply toolkit-ds.yaml again, wait until every Pod is Ready, then push "
             "the update")

DEFAULTS = {
    "observed_runtimes": ["runc"],
    "containerd_version": "1.7",
    "physical_gpus": 4,
    "vram_per_gpu_gib": 40,
    "gpu_node": "lab-node-0",
    "gpu_amount": "4",
    "timeslicing_node": "lab-node-1",
    "replicas": 5,
    "nodes": None,  # None: every node labelled gpu-incident-lab/node=true
    "node_label": "gpu-incident-lab/node=true",
    "script_timeout": 15,
}


class Result:
    def __init__(self):
        self.reasons = []
        self.advice = []

    def fail(self, text):
        self.reasons.append(text)

    def note(self, text):
        self.advice.append(text)

    def as_dict(self):
        return {"passed": not self.reasons, "reasons": self.reasons, "advice": self.advice}


_get = cc.get  # nested dict lookup, None when a key is missing


def read_kv(path, keys, result, name):
    """KEY=VALUE lines in the given order; reasons for anything else."""
    if not os.path.isfile(path):
        result.fail("%s is missing (expected at %s)" % (name, path))
        return None
    with open(path, encoding="utf-8", errors="replace") as handle:
        lines = [line.rstrip("\r\n") for line in handle]
    while lines and not lines[-1].strip():
        lines.pop()
    values = {}
    found = []
    for number, line in enumerate(lines, start=1):
        if "=" not in line:
            result.fail("%s line %d is not KEY=VALUE: %r" % (name, number, line))
            return None
        key, value = line.split("=", 1)
        found.append(key.strip())
        values[key.strip()] = value.strip()
    if found != keys:
        if sorted(found) == sorted(keys):
            result.fail("%s has the right keys in the wrong order: %s; the order is %s"
                        % (name, ", ".join(found), ", ".join(keys)))
        else:
            missing = [k for k in keys if k not in found]
            extra = [k for k in found if k not in keys]
            result.fail("%s must have exactly %d lines %s%s%s" % (
                name, len(keys), ", ".join(keys),
                "; missing: " + ", ".join(missing) if missing else "",
                "; unexpected: " + ", ".join(extra) if extra else ""))
        return None
    return values


def _names(text):
    return sorted(n.strip() for n in text.split(",") if n.strip())


def expect_fields(result, name, obj, wanted):
    """One reason per field of obj that differs: wanted is [((key, ...), value), ...]."""
    for keys, value in wanted:
        have = _get(obj, *keys)
        if have != value:
            result.fail("%s: %s must be %s (found %r)" % (name, ".".join(keys), value, have))


def read_text_file(path, result, name):
    """The file's text, or None with a plain reason (missing, a folder, not UTF-8)."""
    if not os.path.isfile(path):
        result.fail("%s is missing (expected at %s)" % (name, path))
        return None
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        result.fail("%s is not UTF-8 text (byte 0x%02x on line %d); save it as UTF-8"
                    % (name, data[exc.start], data[:exc.start].count(b"\n") + 1))
        return None


def load_yaml_file(path, result, name):
    text = read_text_file(path, result, name)
    if text is None:
        return None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        result.fail("%s is not valid YAML%s: %s" % (
            name, " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark else "",
            getattr(exc, "problem", None) or exc))
        return None
    if len(docs) != 1 or not isinstance(docs[0], dict):
        result.fail("%s should hold exactly one object, found %d" % (name, len(docs)))
        return None
    return docs[0]


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


class Grader:
    def __init__(self, lab_root, kubeconfig=None, context=None, **settings):
        self.root = lab_root
        self.kubeconfig = kubeconfig
        self.context = context
        self.settings = dict(DEFAULTS)
        self.settings.update({k: v for k, v in settings.items() if v is not None})
        self._api = None
        self._api_error = None

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    # ------------------------------------------------------------ cluster
    def api(self):
        if self._api is None and self._api_error is None:
            if not self.kubeconfig:
                self._api_error = "no kubeconfig given"
            else:
                try:
                    kube = kube_client(self.kubeconfig, self.context)
                    kube.get("/api/v1/namespaces", params={"limit": 1})
                    self._api = kube
                except Exception as exc:  # unreachable, bad kubeconfig
                    self._api_error = str(exc).splitlines()[0][:300]
        return self._api

    def _need_cluster(self, result):
        if self.api() is None:
            result.fail("the cluster is not reachable (%s): start it with `ansible-playbook "
                        "lab.yml --tags environment`" % self._api_error)
            return False
        return True

    def _read(self, path):
        """The object at an API path, or None when it does not exist."""
        return self.api().get(path, missing_ok=True)

    def lab_node_names(self):
        if self.settings["nodes"]:
            return list(self.settings["nodes"])
        nodes = self.api().items("/api/v1/nodes", labelSelector=self.settings["node_label"])
        return sorted(n["metadata"]["name"] for n in nodes)

    # ------------------------------------------------------------ steps
    def _toml(self, path, result, name):
        if not os.path.isfile(path):
            result.fail("%s is missing (expected at %s)" % (name, path))
            return None
        try:
            text, data = cc.load_toml(path)
            cc.check_unquoted_plugins(path, text, data)
        except cc.ConfigError as exc:
            if exc.mistake == "unquoted-dotted-table":
                first = exc.message.split(":")[0]
                result.fail("%s line %s: %s - %s" % (name, exc.line, first, MISTAKE_1))
            else:
                result.fail("%s: %s" % (name, exc))
            return None
        return data

    def step1(self):
        r = Result()
        data = self._toml(self.path("etc/containerd/config.toml"), r, "config.toml")
        if data is None:
            return r
        if data.get("version") != 2:
            r.fail("config.toml: top-level `version` must be 2 (found %r)" % data.get("version"))
        imports = data.get("imports")
        nested = list(cc.nested_imports(data))
        if imports is None and nested:
            r.fail("config.toml: `imports` is inside table [%s], so it is not top-level; move it "
                   "above the first table header" % cc.format_table_path(nested[0][0]))
        elif not isinstance(imports, list):
            r.fail("config.toml: top-level `imports` must be an array")
        elif not any(isinstance(i, str) and i.endswith("conf.d/*.toml") for i in imports):
            r.fail("config.toml: one `imports` entry must end in conf.d/*.toml (found %s)" % imports)
        containerd = _get(data, *CRI)
        if not isinstance(containerd, dict):
            r.fail('config.toml: no table [plugins."io.containerd.grpc.v1.cri".containerd]')
            return r
        if containerd.get("default_runtime_name") != "runc":
            r.fail('config.toml: default_runtime_name must be "runc" (found %r)'
                   % containerd.get("default_runtime_name"))
        runc = _get(containerd, "runtimes", "runc")
        if not isinstance(runc, dict):
            r.fail('config.toml: no table [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]')
            return r
        if runc.get("runtime_type") != "io.containerd.runc.v2":
            r.fail('config.toml: runtimes.runc.runtime_type must be "io.containerd.runc.v2" (found %r)'
                   % runc.get("runtime_type"))
        cgroup = _get(runc, "options", "SystemdCgroup")
        if cgroup is not True:
            r.fail("config.toml: runtimes.runc.options.SystemdCgroup must be the boolean true "
                   "(found %r)" % cgroup)
        extra = sorted(set(containerd.get("runtimes", {})) - {"runc"})
        if extra:
            r.note("config.toml also defines runtime(s) %s; the incident's main file had runc only"
                   % ", ".join(extra))
        return r

    def step2(self):
        r = Result()
        data = self._toml(self.path("etc/containerd/conf.d/99-nvidia.toml"), r, "99-nvidia.toml")
        if data is None:
            return r
        nvidia = _get(data, *(CRI + ("runtimes", "nvidia")))
        if not isinstance(nvidia, dict):
            r.fail('99-nvidia.toml: no table [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]')
            return r
        if nvidia.get("runtime_type") != "io.containerd.runc.v2":
            r.fail('99-nvidia.toml: runtime_type must be "io.containerd.runc.v2" (found %r)'
                   % nvidia.get("runtime_type"))
        options = nvidia.get("options") if isinstance(nvidia.get("options"), dict) else {}
        if options.get("BinaryName") != "/usr/bin/nvidia-container-runtime":
            r.fail('99-nvidia.toml: options.BinaryName must be "/usr/bin/nvidia-container-runtime" '
                   "(found %r) - the wrapper that injects devices and libraries"
                   % options.get("BinaryName"))
        if options.get("SystemdCgroup") is not True:
            r.fail("99-nvidia.toml: options.SystemdCgroup must be the boolean true (found %r); "
                   "the cgroup driver must agree with the main config" % options.get("SystemdCgroup"))
        main = self.path("etc/containerd/config.toml")
        if os.path.isfile(main):
            try:
                judged = cc.judge(main, self.settings["containerd_version"], root=self.root)
                if not any(os.path.basename(f) == "99-nvidia.toml" for f in judged["dropin_files"]):
                    r.note("the main config's imports do not pick up 99-nvidia.toml")
            except cc.ConfigError:
                pass
        return r

    def step3(self):
        r = Result()
        values = read_kv(self.path("out/merge.txt"), MERGE_KEYS, r, "merge.txt")
        if values is None:
            return r
        main = self.path("etc/containerd/config.toml")
        try:
            judged = cc.judge(main, self.settings["containerd_version"], root=self.root)
        except cc.ConfigError as exc:
            r.fail("merge.txt cannot be checked because the configs do not load: %s" % exc)
            return r
        if _names(values["MAIN_RUNTIMES"]) != judged["main_runtimes"]:
            r.fail("MAIN_RUNTIMES=%s, but config.toml defines %s"
                   % (values["MAIN_RUNTIMES"], ",".join(judged["main_runtimes"]) or "nothing"))
        if _names(values["DROPIN_RUNTIMES"]) != judged["dropin_runtimes"]:
            r.fail("DROPIN_RUNTIMES=%s, but the imported drop-ins define %s"
                   % (values["DROPIN_RUNTIMES"], ",".join(judged["dropin_runtimes"]) or "nothing"))
        want = "yes" if judged["conflict"] else "no"
        if values["CONFLICT"].lower() != want:
            r.fail("CONFLICT=%s, but the two files %s a table" % (
                values["CONFLICT"], "do share" if judged["conflict"] else "do not share"))
        given = values["CONFLICT_TABLE"].replace("'", '"').replace(" ", "")
        tables = [t.replace(" ", "") for t in judged["conflict_tables"]]
        if judged["conflict"] and given not in tables and given != ",".join(tables):
            hint = ""
            if given.replace('"', "") == tables[0].replace('"', "") if tables else False:
                hint = " (quote the dotted plugin name, as in the table header)"
            r.fail("CONFLICT_TABLE=%s, but the table both files define is %s%s"
                   % (values["CONFLICT_TABLE"], ", ".join(judged["conflict_tables"]), hint))
        observed = sorted(self.settings["observed_runtimes"])
        if _names(values["LOADED_RUNTIMES"]) != observed:
            r.fail("LOADED_RUNTIMES=%s, but it is the incident-day observation (containerd config "
                   "dump on that node showed %s), not something computed from the files"
                   % (values["LOADED_RUNTIMES"], ",".join(observed)))
        return r

    # ---- step 4: static checks, then two real runs with a fake containerd
    FAKE_DUMP = ('version = 2\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n'
                 '    [plugins."io.containerd.grpc.v1.cri".containerd]\n'
                 '      default_runtime_name = "runc"\n'
                 '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n%s')
    FAKE_RUNTIME = ('        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]\n'
                    '          runtime_type = "io.containerd.runc.v2"\n'
                    '          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]\n'
                    '            SystemdCgroup = true\n')

    def _run_with_fake(self, script, names, workdir):
        fake_dir = tempfile.mkdtemp(dir=workdir)
        dump = os.path.join(fake_dir, "dump.txt")
        with open(dump, "w", encoding="utf-8") as handle:
            handle.write(self.FAKE_DUMP % "".join(self.FAKE_RUNTIME % (n, n) for n in names))
        fake = os.path.join(fake_dir, "containerd")
        with open(fake, "w", encoding="utf-8") as handle:
            handle.write("#!/bin/sh\nif [ \"$1\" = config ] && [ \"$2\" = dump ]; then cat '%s'; "
                         "exit 0; fi\necho \"fake containerd: unexpected arguments: $*\" >&2\n"
                         "exit 64\n" % dump)
        os.chmod(fake, 0o755)
        env = {"PATH": fake_dir + ":/usr/local/bin:/usr/bin:/bin", "HOME": workdir,
               "LANG": "C.UTF-8"}
        try:
            done = subprocess.run([script], env=env, cwd=workdir, capture_output=True, text=True,
                                  check=False,
                                  timeout=self.settings["script_timeout"])
            return done.returncode, (done.stderr or done.stdout).strip()[-300:]
        except subprocess.TimeoutExpired:
            return None, "timed out after %ss" % self.settings["script_timeout"]
        except OSError as exc:
            return None, "cannot run: %s" % exc.strerror

    def step4(self):
        r = Result()
        script = self.path("bin/check-runtime.sh")
        if not os.path.isfile(script):
            r.fail("check-runtime.sh is missing (expected at %s)" % script)
            return r
        with open(script, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        if not os.access(script, os.X_OK):
            r.fail("check-runtime.sh is not executable: chmod +x %s" % script)
        if "/etc/containerd/config.toml" in text:
            r.fail("check-runtime.sh names /etc/containerd/config.toml: judge by what containerd "
                   "loads (containerd config dump), never by the file")
        code = "\n".join(line.split("#", 1)[0] if not line.startswith("#!") else ""
                         for line in text.splitlines())
        absolute = re.search(r"(?<![\w.-])(/[\w.+-]+)*/containerd(?=[\s;|&)'\"]|$)", code)
        if absolute and not re.search(r"/etc/containerd\b", absolute.group(0)):
            r.fail("check-runtime.sh calls containerd by an absolute path (%s): call `containerd "
                   "config dump` found through PATH" % absolute.group(0))
        if not re.search(r"\bcontainerd\s+config\s+dump\b", code):
            r.fail("check-runtime.sh does not run `containerd config dump`")
        if not os.access(script, os.X_OK):
            return r
        workdir = tempfile.mkdtemp(prefix="grade-step4-")
        try:
            without, why = self._run_with_fake(script, ["runc"], workdir)
            if without == 0:
                r.fail("check-runtime.sh exits 0 on a dump without nvidia (only runc loaded): it "
                       "must fail there - a check that always passes checks nothing")
            elif without is None:
                r.fail("check-runtime.sh on a dump without nvidia: %s" % why)
            with_nvidia, why = self._run_with_fake(script, ["runc", "nvidia"], workdir)
            if with_nvidia != 0:
                r.fail("check-runtime.sh fails (exit %s) on a dump that has "
                       "containerd.runtimes.nvidia: %s" % (with_nvidia, why or "no message"))
            lookalike, dummy = self._run_with_fake(script, ["runc", "nvidia-cdi", "nvidia-legacy"], workdir)
            if lookalike == 0:
                r.note("check-runtime.sh also passes when only nvidia-cdi / nvidia-legacy are "
                       "loaded: match the table header [..runtimes.nvidia] followed by ] or .")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return r

    def step5(self):
        r = Result()
        rc = load_yaml_file(self.path("k8s/runtimeclass.yaml"), r, "runtimeclass.yaml")
        if rc is not None:
            expect_fields(r, "runtimeclass.yaml", rc, [
                (("kind",), "RuntimeClass"), (("metadata", "name"), "nvidia")])
            if rc.get("handler") != "nvidia":
                r.fail("runtimeclass.yaml: handler must be nvidia (found %r); name and handler "
                       "are different fields, the handler names the containerd runtime"
                       % rc.get("handler"))
            if _get(rc, "metadata", "namespace"):
                r.fail("runtimeclass.yaml: RuntimeClass is cluster-scoped; remove metadata.namespace")
        pod = load_yaml_file(self.path("k8s/gpu-pod.yaml"), r, "gpu-pod.yaml")
        if pod is not None:
            self._check_pod_manifest(pod, r)
        if not self._need_cluster(r):
            return r
        if self._read("/api/v1/namespaces/gpu-lab") is None:
            r.fail("namespace gpu-lab does not exist in the cluster")
        live_rc = self._read("/apis/node.k8s.io/v1/runtimeclasses/nvidia")
        if live_rc is None:
            r.fail("RuntimeClass nvidia is not in the cluster: apply runtimeclass.yaml")
        elif live_rc.get("handler") != "nvidia":
            r.fail("the cluster's RuntimeClass nvidia has handler %r" % live_rc.get("handler"))
        live_pod = self._read("/api/v1/namespaces/gpu-lab/pods/cuda-probe")
        if live_pod is None:
            r.fail("Pod gpu-lab/cuda-probe is not in the cluster: apply gpu-pod.yaml")
        elif _get(live_pod, "spec", "runtimeClassName") != "nvidia":
            r.fail("the cluster's Pod cuda-probe has runtimeClassName %r"
                   % _get(live_pod, "spec", "runtimeClassName"))
        path = self.path("out/unscheduled.txt")
        if not os.path.isfile(path):
            r.fail("unscheduled.txt is missing (expected at %s)" % path)
            return r
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle.read().strip().splitlines()]
        if len(lines) != 2:
            r.fail("unscheduled.txt must have two lines, the PodScheduled reason and message "
                   "(found %d)" % len(lines))
            return r
        reason, message = lines
        if reason != "Unschedulable":
            r.fail("unscheduled.txt line 1 must be the condition's reason, Unschedulable (found %r)"
                   % reason)
        if not re.search(r"\d+/\d+ nodes are available", message):
            r.fail("unscheduled.txt line 2 is not the scheduler's message (`0/N nodes are "
                   "available: ...`): %r" % message[:120])
        elif "Insufficient nvidia.com/gpu" not in message:
            r.fail("unscheduled.txt: the message does not name the missing resource "
                   "(Insufficient nvidia.com/gpu): %r" % message[:160])
        return r

    def _check_pod_manifest(self, pod, r):
        expect_fields(r, "gpu-pod.yaml", pod, [
            (("kind",), "Pod"), (("metadata", "name"), "cuda-probe"),
            (("metadata", "namespace"), "gpu-lab"), (("spec", "runtimeClassName"), "nvidia")])
        containers = _get(pod, "spec", "containers") or []
        limits = [str(_get(c, "resources", "limits", "nvidia.com/gpu")) for c in containers
                  if isinstance(c, dict)]
        if "1" not in limits:
            r.fail("gpu-pod.yaml: a container needs resources.limits nvidia.com/gpu: 1 (found %s)"
                   % (", ".join(limits) or "no containers"))

    def step6(self):
        r = Result()
        if not self._need_cluster(r):
            return r
        node_name, amount = self.settings["gpu_node"], str(self.settings["gpu_amount"])
        node = self._read("/api/v1/nodes/" + node_name)
        if node is None:
            r.fail("node %s does not exist" % node_name)
            return r
        for field in ("capacity", "allocatable"):
            have = (_get(node, "status", field) or {}).get("nvidia.com/gpu")
            if have != amount:
                r.fail("node %s status.%s nvidia.com/gpu is %s, expected \"%s\"; patch it with "
                       "--subresource=status (a plain patch leaves status alone)"
                       % (node_name, field, have or "unset", amount))
        pod = self._read("/api/v1/namespaces/gpu-lab/pods/cuda-probe")
        if pod is None:
            r.fail("Pod gpu-lab/cuda-probe does not exist")
        elif _get(pod, "status", "phase") != "Running":
            r.fail("Pod cuda-probe is %s, not Running" % _get(pod, "status", "phase"))
        path = self.path("out/node-gpu.txt")
        if not os.path.isfile(path):
            r.fail("node-gpu.txt is missing (expected at %s)" % path)
            return r
        with open(path, encoding="utf-8", errors="replace") as handle:
            rows = [line.split() for line in handle.read().strip().splitlines() if line.strip()]
        if not rows or any(len(row) != 2 for row in rows):
            r.fail("node-gpu.txt must be a two-column table (node name, advertised amount), "
                   "one node a line")
            return r
        if not re.match(r"^[A-Z]", rows[0][0]):
            r.note("node-gpu.txt has no header line (e.g. NAME GPU)")
        else:
            rows = rows[1:]
        table = dict(rows)
        nodes = self.lab_node_names()
        missing = [n for n in nodes if n not in table]
        if missing:
            r.fail("node-gpu.txt lacks node(s) %s" % ", ".join(missing))
        if table.get(node_name) != amount:
            r.fail("node-gpu.txt says %s advertises %s; the cluster says %s"
                   % (node_name, table.get(node_name), amount))
        for name, value in table.items():
            if value != "<none>" and not value.isdigit():
                r.fail("node-gpu.txt: amount of %s is %r; write a number or <none>" % (name, value))
        return r

    def _timeslicing_config(self, r):
        path = self.path("k8s/time-slicing.yaml")
        cm = load_yaml_file(path, r, "time-slicing.yaml")
        if cm is None:
            return None, None
        expect_fields(r, "time-slicing.yaml", cm, [
            (("kind",), "ConfigMap"), (("metadata", "name"), "time-slicing-config"),
            (("metadata", "namespace"), "gpu-operator")])
        value = _get(cm, "data", "any")
        if isinstance(value, (dict, list)):
            r.fail("time-slicing.yaml: data.any is a YAML mapping - " + MISTAKE_2)
            return cm, None
        if not isinstance(value, str):
            r.fail("time-slicing.yaml: data.any must be a string holding the sharing config")
            return cm, None
        try:
            config = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            r.fail("time-slicing.yaml: data.any is not valid YAML inside: %s" % exc)
            return cm, None
        sharing = _get(config, "sharing", "timeSlicing")
        if not isinstance(sharing, dict):
            r.fail("time-slicing.yaml: data.any has no sharing.timeSlicing section")
            return cm, None
        if sharing.get("failRequestsGreaterThanOne") is not True:
            r.fail("time-slicing.yaml: sharing.timeSlicing.failRequestsGreaterThanOne must be true")
        resources = sharing.get("resources")
        first = resources[0] if isinstance(resources, list) and resources else {}
        if not isinstance(first, dict) or first.get("name") != "nvidia.com/gpu":
            r.fail("time-slicing.yaml: the first item of sharing.timeSlicing.resources must have "
                   "name: nvidia.com/gpu")
        elif first.get("replicas") != self.settings["replicas"]:
            r.fail("time-slicing.yaml: replicas must be %s (found %r)"
                   % (self.settings["replicas"], first.get("replicas")))
        return cm, value

    def step7(self):
        r = Result()
        cm, config = self._timeslicing_config(r)
        values = read_kv(self.path("out/slots.txt"), ts.SLOT_KEYS, r, "slots.txt")
        table = None
        if config is not None:
            try:
                table = ts.slot_table(config, int(self.settings["physical_gpus"]),
                                      self.settings["vram_per_gpu_gib"])
            except ts.SlotsError as exc:
                r.fail("time-slicing.yaml: %s" % exc.message)
        if table is not None and values is not None:
            for key in ts.SLOT_KEYS:
                want = str(table[key.lower()])
                if values[key] != want:
                    hint = ""
                    if key == "VRAM_GUARANTEED_PER_SLOT_GIB":
                        hint = (" - time-slicing rotates turns on the whole card; no memory is "
                                "reserved per slot")
                    elif key == "VRAM_SHARED_PER_GPU_GIB":
                        hint = " - all slots of a GPU share its whole memory"
                    r.fail("slots.txt %s=%s, expected %s%s" % (key, values[key], want, hint))
        if not self._need_cluster(r):
            return r
        live = self._read("/api/v1/namespaces/gpu-operator/configmaps/time-slicing-config")
        if live is None:
            r.fail("ConfigMap gpu-operator/time-slicing-config is not in the cluster: apply "
                   "time-slicing.yaml")
        elif config is not None and \
                yaml.safe_load((live.get("data") or {}).get("any", "") or "") != yaml.safe_load(config):
            r.fail("the cluster's time-slicing-config differs from time-slicing.yaml: apply it again")
        node_name = self.settings["timeslicing_node"]
        node = self._read("/api/v1/nodes/" + node_name)
        advertised = (_get(node, "status", "allocatable") or {}).get("nvidia.com/gpu") if node else None
        if table is not None and str(advertised) != str(table["advertised"]):
            r.fail("node %s advertises nvidia.com/gpu=%s; with %s GPUs x %s replicas it must be "
                   "\"%s\" (capacity and allocatable, through the status subresource)"
                   % (node_name, advertised or "unset", table["physical_gpus"], table["replicas"],
                      table["advertised"]))
        if values is not None and advertised and values["ADVERTISED"] != str(advertised):
            r.fail("slots.txt ADVERTISED=%s but %s advertises %s"
                   % (values["ADVERTISED"], node_name, advertised))
        return r

    def step8(self):
        r = Result()
        ds_file = load_yaml_file(self.path("k8s/toolkit-ds.yaml"), r, "toolkit-ds.yaml")
        if ds_file is not None:
            if ds_file.get("kind") != "DaemonSet":
                r.fail("toolkit-ds.yaml: kind must be DaemonSet")
            if _get(ds_file, "metadata", "name") != "nvidia-container-toolkit" or \
                    _get(ds_file, "metadata", "namespace") != "gpu-operator":
                r.fail("toolkit-ds.yaml: must be gpu-operator/nvidia-container-toolkit")
            if str(_get(ds_file, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")) != "1":
                r.fail("toolkit-ds.yaml: spec.updateStrategy.rollingUpdate.maxUnavailable must be 1")
            containers = _get(ds_file, "spec", "template", "spec", "containers")
            if not isinstance(containers, list) or not containers or not isinstance(containers[0], dict):
                r.fail("toolkit-ds.yaml: spec.template.spec.containers must be a list of containers "
                       "(- name: ..., image: ...)")
                containers = [{}]
            if containers[0].get("image") != "nvcr.io/nvidia/k8s/container-toolkit:v1.16.2":
                r.fail("toolkit-ds.yaml: the image must be nvcr.io/nvidia/k8s/container-toolkit:"
                       "v1.16.2 (the initial spec; the update is pushed later)")
            if str(_get(containers[0], "resources", "requests", "memory")) != "128Mi":
                r.fail("toolkit-ds.yaml: the memory request must be 128Mi")
        if not self._need_cluster(r):
            return r
        api = self.api()
        try:
            snap = ro.snapshot(api, "gpu-operator", "nvidia-container-toolkit")
        except Exception as exc:
            if getattr(exc, "status", None) == 404:
                r.fail("DaemonSet gpu-operator/nvidia-container-toolkit is not in the cluster")
                return r
            raise
        verdict = ro.judge(snap)
        images = snap["template_images"]
        if images != ["nvcr.io/nvidia/k8s/container-toolkit:v1.17.0"]:
            r.fail("the DaemonSet's image is %s; update it to "
                   "nvcr.io/nvidia/k8s/container-toolkit:v1.17.0" % ", ".join(images))
        memory = [str(_get(c, "resources", "requests", "memory")) for c in snap["template_containers"]]
        if "64Gi" not in memory:
            r.fail("the DaemonSet's memory request is %s; update it to 64Gi" % ", ".join(memory))
        if not verdict["stalled"]:
            r.fail("the rollout has not stalled: no Pod of the new spec is unschedulable "
                   "(desired %s, updated %s, ready %s)"
                   % (verdict["desired"], verdict["updated"], verdict["ready"]))
        self._check_ready_before_update(api, "gpu-operator", snap, verdict, r)
        values = read_kv(self.path("out/rollout.txt"), ro.REPORT_KEYS, r, "rollout.txt")
        if values is None:
            return r
        for key in ro.REPORT_KEYS:
            want = str(verdict[key.lower()])
            if values[key] != want:
                r.fail("rollout.txt %s=%s, but the cluster shows %s (%s)" % (
                    key, values[key], want, {
                        "DESIRED": "status.desiredNumberScheduled",
                        "UPDATED": "status.updatedNumberScheduled",
                        "READY": "status.numberReady",
                        "OLD_IMAGE_PODS": "Pods still on the old image",
                        "MAX_UNAVAILABLE": "spec.updateStrategy.rollingUpdate.maxUnavailable",
                        "BLOCKER": "from the scheduler's message: %s" % verdict["blocker_message"],
                    }[key]))
        return r

    def _check_ready_before_update(self, api, namespace, snap, verdict, r):
        """Mistake 3: were the old Pods Ready before the new spec was pushed?"""
        try:
            max_unavailable = int(str(snap["max_unavailable"]))
        except (TypeError, ValueError):
            return
        new_hashes = {p["revision"] for p in snap["pods"] if p["images"] == snap["template_images"]}
        revisions = api.items("/apis/apps/v1/namespaces/%s/controllerrevisions" % namespace,
                              labelSelector=snap["selector"])
        # RFC 3339 UTC timestamps as the API server writes them compare as strings
        pushed = [rev["metadata"]["creationTimestamp"] for rev in revisions
                  if (rev["metadata"].get("labels") or {}).get("controller-revision-hash") in new_hashes]
        old = [p for p in snap["pods"] if p["images"] != snap["template_images"]]
        expected_old = max(verdict["desired"] - max_unavailable, 0)
        late = []
        if pushed:
            when = min(pushed)
            late = [p["name"] for p in old if not p["ready_since"] or p["ready_since"] > when]
        if len(old) < expected_old or late:
            r.fail("%s: %d old Pod(s) remain where %d were expected%s" % (
                MISTAKE_3, len(old), expected_old,
                "; not Ready before the update: " + ", ".join(late) if late else ""))

    # Words an answer's EVIDENCE names when it points at the right thing, per layer.
    DRILL_WORDS = {
        "driver": ["cuda.driver", "driver label", "driver_ok", "driver version", "driver-version",
                   "nvidia-smi", "kernel", "xid", "nvrm"],
        "container-runtime": ["runtimes_loaded", "runtimes_running", "restart_pending", "crictl",
                              "config dump", "handler", "runtime"],
        "device-plugin": ["device-plugin", "device plugin", "device-plugins", "socket",
                          "daemonset", "plugin pod"],
        "node-advertisement": ["capacity", "allocatable", "node status", "advertis"],
        "scheduling": ["podscheduled", "insufficient", "taint", "toleration", "affinity",
                       "unschedulable", "request", "scheduler"],
        "workload": ["crashloop", "restart", "exit code", "logs", "phase"],
    }

    def reboot_fix(self, node, crictl):
        """The fix after the real reboot: the node Ready, runc and nvidia in the RUNNING daemon
        (crictl info on the node, not a file), and gpu-lab/runtime-check - runtimeClassName
        nvidia, on the node - running: its sandbox started through the nvidia runtime."""
        r = Result()
        if not node:
            r.fail("this lab has no real node (lab_real_node is false, or the machine could not "
                   "run one): the reboot drill needs it - run `ansible-playbook lab.yml`")
            return r
        if not self._need_cluster(r):
            return r
        obj = self._read("/api/v1/nodes/" + node)
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
        pod = self._read("/api/v1/namespaces/gpu-lab/pods/runtime-check")
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
        """Grade a diagnosis drill: <lab_root>/drills/NAME.txt holds LAYER= and EVIDENCE=."""
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
        words = self.DRILL_WORDS.get(state.get("layer"), [])
        if len(evidence.split()) < 3:
            r.fail("EVIDENCE is empty or too short: say what you read (API field, command) and "
                   "what it showed")
        elif not any(w in evidence.lower() for w in words):
            r.fail("EVIDENCE does not name what shows the break (one of: %s)" % ", ".join(words))
        if self._need_cluster(r):
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

    STEPS = {1: "step1", 2: "step2", 3: "step3", 4: "step4",
             5: "step5", 6: "step6", 7: "step7", 8: "step8"}

    def grade(self, steps):
        out = {}
        for step in steps:
            try:
                result = getattr(self, self.STEPS[int(step)])()
            except Exception as exc:  # a check must report, not crash the grader
                result = Result()
                result.fail("the grader could not judge this step's files (%s); check them "
                            "against the guide and report this as a grader bug" % exc)
            out[str(step)] = result.as_dict()
        return out


def report_text(results, report_path=None, junit_path=None):
    """The grade as a person reads it: one PASS/FAIL line per step, reasons and advice below."""
    lines = []
    for step, res in results.items():
        label = ("Step %s" % step) if str(step).isdigit() else str(step).capitalize()
        lines.append("%-10s %s" % (label, "PASS" if res["passed"] else "FAIL"))
        for reason in res["reasons"]:
            lines.append("    - %s" % reason)
        for tip in res["advice"]:
            lines.append("    (advice) %s" % tip)
    failed = [k for k, v in results.items() if not v["passed"]]
    lines.append("")
    lines.append("%d of %d passed%s" % (len(results) - len(failed), len(results),
                                        "; failed: %s" % ", ".join(map(str, failed)) if failed else ""))
    for name, path in (("Report (JSON)", report_path), ("Report (JUnit)", junit_path)):
        if path:
            lines.append("%s: %s" % (name, path))
    return "\n".join(lines) + "\n"


def junit_xml(results, suite="gpu-incident-lab"):
    """The same results as JUnit XML: one test case per step, a failure with its reasons."""
    from xml.sax.saxutils import escape, quoteattr
    failed = sum(1 for v in results.values() if not v["passed"])
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<testsuite name=%s tests="%d" failures="%d">' % (quoteattr(suite), len(results), failed)]
    for step, res in results.items():
        name = ("step %s" % step) if str(step).isdigit() else str(step)
        out.append('  <testcase classname=%s name=%s>' % (quoteattr(suite), quoteattr(name)))
        if not res["passed"]:
            out.append('    <failure message=%s>%s</failure>' % (
                quoteattr(res["reasons"][0] if res["reasons"] else "failed"),
                escape("\n".join(res["reasons"] + ["advice: " + a for a in res["advice"]]))))
        elif res["advice"]:
            out.append('    <system-out>%s</system-out>' % escape("\n".join(res["advice"])))
        out.append('  </testcase>')
    out.append('</testsuite>')
    return "\n".join(out) + "\n"
