# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Steps 1-4: the incident node's containerd files, graded with no cluster.

The files are read as containerd reads them - the merge model of module_utils/containerd/merge.py
(TOML tables, imports resolved under the lab folder, which stands for the node's /). Step 4 runs
the trainee's script, twice, with a fake containerd first on PATH in a temporary folder.
"""

import os
import re
import shutil
import subprocess
import tempfile

from ansible.module_utils.containerd import loader as cc
from ansible.module_utils.containerd import merge as cm
from ansible.module_utils.grader.base import MISTAKE_1, GraderBase, Result, get, names, needs, read_kv

CRI = ("plugins", cc.CRI_V2, "containerd")
MERGE_KEYS = ["MAIN_RUNTIMES", "DROPIN_RUNTIMES", "CONFLICT", "CONFLICT_TABLE", "LOADED_RUNTIMES"]
# what step 2 says about a drop-in option that differs, after "must be X (found Y)"
DROPIN_OPTION_WHY = {
    "BinaryName": " - the wrapper that injects devices and libraries",
    "SystemdCgroup": "; the cgroup driver must agree with the main config",
}


def toml_value(value):
    """A value as the trainee writes it in TOML, for a reason: "text", the boolean true, 3."""
    if isinstance(value, bool):
        return "the boolean %s" % ("true" if value else "false")
    return '"%s"' % value if isinstance(value, str) else str(value)


class NodeSteps(GraderBase):
    """The checks of steps 1-4 (mixed into Grader)."""

    def toml(self, path, result, name):
        """A trainee's TOML file parsed, or None with the reason - common mistake 1 named."""
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
        """The main config.toml: top-level ``version = 2`` and ``imports`` (one entry ending in
        conf.d/*.toml), the CRI plugin's default runtime runc with runtime_type
        io.containerd.runc.v2 and SystemdCgroup the boolean true.

        What the trainee must have understood: TOML's hierarchy comes from table names, not
        indentation - ``imports`` written below a table header belongs to that table and is
        ignored, and an unquoted dotted plugin name builds other tables (mistake 1)."""
        r = Result()
        data = self.toml(self.path("etc/containerd/config.toml"), r, "config.toml")
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
        containerd = get(data, *CRI)
        if not isinstance(containerd, dict):
            r.fail('config.toml: no table [plugins."io.containerd.grpc.v1.cri".containerd]')
            return r
        if containerd.get("default_runtime_name") != "runc":
            r.fail('config.toml: default_runtime_name must be "runc" (found %r)'
                   % containerd.get("default_runtime_name"))
        runc = get(containerd, "runtimes", "runc")
        if not isinstance(runc, dict):
            r.fail('config.toml: no table [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]')
            return r
        if runc.get("runtime_type") != "io.containerd.runc.v2":
            r.fail('config.toml: runtimes.runc.runtime_type must be "io.containerd.runc.v2" (found %r)'
                   % runc.get("runtime_type"))
        cgroup = get(runc, "options", "SystemdCgroup")
        if cgroup is not True:
            r.fail("config.toml: runtimes.runc.options.SystemdCgroup must be the boolean true "
                   "(found %r)" % cgroup)
        extra = sorted(set(containerd.get("runtimes", {})) - {"runc"})
        if extra:
            r.note("config.toml also defines runtime(s) %s; the incident's main file had runc only"
                   % ", ".join(extra))
        return r

    @needs("nvidia_dropin", "containerd_version")
    def step2(self):
        """The toolkit's drop-in (setting nvidia_dropin: its file name in conf.d and its
        runtimes - the lab's lab_nvidia_dropin): each runtime's table with the same
        runtime_type and options, BinaryName the nvidia-container-runtime wrapper and
        SystemdCgroup true; advice when the main config's imports would not pick the file up.

        What the trainee must have understood: the runtime that the nvidia RuntimeClass names
        is a runc shim running the wrapper that injects devices and libraries, and its cgroup
        driver must agree with the main config's."""
        r = Result()
        dropin = self.settings["nvidia_dropin"]
        name = dropin["name"]
        data = self.toml(self.path("etc/containerd/conf.d", name), r, name)
        if data is None:
            return r
        for runtime, want in sorted((dropin.get("runtimes") or {}).items()):
            have = get(data, *(CRI + ("runtimes", runtime)))
            if not isinstance(have, dict):
                r.fail('%s: no table [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]'
                       % (name, runtime))
                continue
            options = have.get("options") if isinstance(have.get("options"), dict) else {}
            wanted = [(key, value, have.get(key)) for key, value in sorted(want.items())
                      if key != "options"]
            wanted += [("options." + key, value, options.get(key))
                       for key, value in sorted((want.get("options") or {}).items())]
            for key, value, found in wanted:
                if found != value or type(found) is not type(value):
                    r.fail("%s: %s must be %s (found %r)%s" % (
                        name, key, toml_value(value), found,
                        DROPIN_OPTION_WHY.get(key.split(".")[-1], "")))
        main = self.path("etc/containerd/config.toml")
        if os.path.isfile(main):
            try:
                judged = cm.judge(main, self.settings["containerd_version"], root=self.root)
                if not any(os.path.basename(f) == name for f in judged["dropin_files"]):
                    r.note("the main config's imports do not pick up %s" % name)
            except cc.ConfigError:
                pass
        return r

    @needs("containerd_version", "observed_runtimes")
    def step3(self):
        """merge.txt against the trainee's own two files as containerd (setting
        containerd_version) merges them: MAIN_RUNTIMES, DROPIN_RUNTIMES, CONFLICT and
        CONFLICT_TABLE computed from the files; LOADED_RUNTIMES equal to the incident-day
        observation (setting observed_runtimes), not computed.

        What the trainee must have understood: both files define the one table
        ...containerd.runtimes, and a file on disk is not what the running daemon loaded -
        only `containerd config dump` on the node says that."""
        r = Result()
        values = read_kv(self.path("out/merge.txt"), MERGE_KEYS, r, "merge.txt")
        if values is None:
            return r
        main = self.path("etc/containerd/config.toml")
        try:
            judged = cm.judge(main, self.settings["containerd_version"], root=self.root)
        except cc.ConfigError as exc:
            r.fail("merge.txt cannot be checked because the configs do not load: %s" % exc)
            return r
        if names(values["MAIN_RUNTIMES"]) != judged["main_runtimes"]:
            r.fail("MAIN_RUNTIMES=%s, but config.toml defines %s"
                   % (values["MAIN_RUNTIMES"], ",".join(judged["main_runtimes"]) or "nothing"))
        if names(values["DROPIN_RUNTIMES"]) != judged["dropin_runtimes"]:
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
        if names(values["LOADED_RUNTIMES"]) != observed:
            r.fail("LOADED_RUNTIMES=%s, but it is the incident-day observation (containerd config "
                   "dump on that node showed %s), not something computed from the files"
                   % (values["LOADED_RUNTIMES"], ",".join(observed)))
        return r

    # ---- step 4: static checks, then real runs with a fake containerd
    SCRIPT_TIMEOUT = 15  # seconds one run of the trainee's script may take
    FAKE_DUMP = ('version = 2\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n'
                 '    [plugins."io.containerd.grpc.v1.cri".containerd]\n'
                 '      default_runtime_name = "runc"\n'
                 '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n%s')
    FAKE_RUNTIME = ('        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]\n'
                    '          runtime_type = "io.containerd.runc.v2"\n'
                    '          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]\n'
                    '            SystemdCgroup = true\n')

    def run_with_fake(self, script, runtimes, workdir):
        """Run the script with a fake `containerd config dump` listing these runtimes first on
        PATH: (exit code or None, the last of its output or why it could not run)."""
        fake_dir = tempfile.mkdtemp(dir=workdir)
        dump = os.path.join(fake_dir, "dump.txt")
        with open(dump, "w", encoding="utf-8") as handle:
            handle.write(self.FAKE_DUMP % "".join(self.FAKE_RUNTIME % (n, n) for n in runtimes))
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
                                  check=False, timeout=self.SCRIPT_TIMEOUT)
            return done.returncode, (done.stderr or done.stdout).strip()[-300:]
        except subprocess.TimeoutExpired:
            return None, "timed out after %ss" % self.SCRIPT_TIMEOUT
        except OSError as exc:
            return None, "cannot run: %s" % exc.strerror

    def step4(self):
        """check-runtime.sh: executable, runs `containerd config dump` found through PATH (no
        absolute path), never names /etc/containerd/config.toml; then really run with a fake
        containerd - it must fail on a dump with runc only and pass on one with nvidia (advice
        when look-alike runtimes such as nvidia-cdi pass too).

        What the trainee must have understood: judge by what containerd loads, never by what a
        file says - and a check that always passes checks nothing."""
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
            without, why = self.run_with_fake(script, ["runc"], workdir)
            if without == 0:
                r.fail("check-runtime.sh exits 0 on a dump without nvidia (only runc loaded): it "
                       "must fail there - a check that always passes checks nothing")
            elif without is None:
                r.fail("check-runtime.sh on a dump without nvidia: %s" % why)
            with_nvidia, why = self.run_with_fake(script, ["runc", "nvidia"], workdir)
            if with_nvidia != 0:
                r.fail("check-runtime.sh fails (exit %s) on a dump that has "
                       "containerd.runtimes.nvidia: %s" % (with_nvidia, why or "no message"))
            lookalike, dummy = self.run_with_fake(script, ["runc", "nvidia-cdi", "nvidia-legacy"],
                                                  workdir)
            if lookalike == 0:
                r.note("check-runtime.sh also passes when only nvidia-cdi / nvidia-legacy are "
                       "loaded: match the table header [..runtimes.nvidia] followed by ] or .")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return r
