#!/usr/bin/env python3
"""Which programs the stages of `make lab` and `make test` call, and who provides each.

    python3 tools/host_programs.py          a table: program, provider, first place it is called
                                            (exit 1 when a program has no provider)

The stages call programs from the Makefile's recipes, the project's shell scripts and the tests'
Python. This reads them the way a reviewer would look for them - a recipe's commands, `command -v
NAME`, `shutil.which("NAME")`, the first word of a `subprocess` call's argument list, an absolute
`/usr/bin/NAME` - and asks who gives each one:

- the host setup list, toolchain/host-packages (what `make lab` / `make test` install with apt-get);
- Debian's base system: the programs of the packages this machine's dpkg marks Essential or of
  priority required or important (every Debian install has them);
- the venv (.venv/bin, from requirements.txt) or the project's own builds (toolchain/build.sh's
  components, the containerd oracles, the mock's nvidia-smi) - named in BUILT below;
- a prerequisite the README names (Go, Python, git to clone), in PREREQUISITES.

tests/unit/toolchain/test_host_programs.py fails when a program has none of them: the next tool a
stage calls cannot slip in through CI's machine again.
"""
# host_programs: not scanned
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What the stages run, by where it is written (git's tracked files under these; corpora are data)
SCANNED = ("Makefile", ".ci/run", "toolchain", "tools", "tests", "molecule", "roles", "playbooks", "bench")
SKIPPED = re.compile(r"(^|/)(\w+_corpus|trainee|images|fixtures)/|\.(json|toml|txt|png|md|tsv)$")

# The README's prerequisites: on the machine before the two commands (host-setup.sh checks them)
PREREQUISITES = {
    "go": "Go 1.26+ (README; host-setup.sh checks it)",
    "python3": "Python 3.11 (README)",
    "git": "the checkout itself is a git clone (README)",
    "apt-get": "Debian or similar (README; host-setup.sh checks it)",
    "dpkg-deb": "Debian or similar (README; host-setup.sh checks it)",
}
# Built or unpacked by the project itself (toolchain/build.sh, the Makefile's oracles, the real node)
BUILT = {
    "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd", "kwok",
    "kwokctl", "kubelet", "crictl", "nvidia-device-plugin", "config-manager",
    "nvidia-container-runtime", "nvidia-ctk", "node-problem-detector", "nvidia-mig-parted",
    "gpu-feature-discovery", "nfd-master",
    "containerd",     # Debian's package unpacked (make oracle; the real node), 2.x built from toolchain/
    "nvidia-smi",     # the mock's reader, compiled by the real node's script
    "busybox",        # Debian's busybox-static, unpacked into the real node's images (in-image paths)
    # NVIDIA's toolkit installers (toolchain/build.sh, group toolkit) and the stand-in for the C
    # nvidia-container-cli, laid out in the copy of the toolkit's container (roles/gpu_toolkit)
    "nvidia-ctk-installer", "nvidia-toolkit", "nvidia-container-cli",
}
# Called only where present, with a way without them
OPTIONAL = {
    "sudo": "host-setup.sh and the trainee bootstrap use it only when not root and it is there",
    "chromium-browser": "tried after Debian's chromium (another distribution's name)",
    "google-chrome": "tried after Debian's chromium (another distribution's name)",
}
# A file that names programs as data (this one, its test) says so on a line of its own
NOT_SCANNED = "# host_programs: not scanned"
# Shell words that are not programs
SHELL_WORDS = set("""
if then else elif fi for while until do done case esac in function return exit break continue
local export readonly declare set unset shift source . eval exec trap wait read echo printf cd
pwd test [ [[ ] ]] true false : command type builtin let ulimit umask getopts hash alias
time mapfile kill jobs fg bg disown pushd popd dirs
""".split())
RECIPE_SPLIT = re.compile(r"&&|\|\||;|\||\$\(|`|\{|\(|\bthen\b|\bdo\b|\belse\b")
PATTERNS = (
    re.compile(r"command -v ([A-Za-z0-9_.+-]+)"),
    re.compile(r"shutil\.which\(\s*[\"']([A-Za-z0-9_.+-]+)[\"']"),
    re.compile(r"subprocess\.(?:run|Popen|check_output|check_call|call)\(\s*\[\s*[\"']([A-Za-z0-9_.+-]+)[\"']"),
    re.compile(r"[\"'](?:/usr)?/s?bin/([A-Za-z0-9_.+-]+)[\"']"),
)


def tracked_files(root):
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *SCANNED],
                         cwd=root, capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if not SKIPPED.search(f) and (root / f).is_file()]


def recipe_programs(makefile_text):
    """(line, program) for the first word of every command in the Makefile's recipes."""
    found, lines, pending = [], [], None
    for number, line in enumerate(makefile_text.splitlines(), 1):  # a continued line is one command
        if pending:
            pending = (pending[0], pending[1][:-1] + " " + line.strip())
        elif line.startswith("\t"):
            pending = (number, line)
        if pending and not pending[1].endswith("\\"):
            lines.append(pending)
            pending = None
    for number, line in lines:
        # make's and the shell's variables, then quoted text (an echo's words are not commands)
        command = re.sub(r"\$\$?[({][^)}]*[)}]", "$V", line.strip().lstrip("@-"))
        command = re.sub(r'"[^"]*"' + r"|'[^']*'", "''", command)
        for part in RECIPE_SPLIT.split(command):
            words = part.strip().split()
            while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or words[0] in ("env", "!")):
                words.pop(0)  # VAR=value before a command, `env`, `!`
            if not words:
                continue
            word = words[0].strip("\"'")
            if not word or word[0] in "$\\#<>" or "/" in word or word in SHELL_WORDS:
                continue  # a variable-made path ($(BIN)/pytest), a script of the project, a builtin
            if re.match(r"^[A-Za-z][A-Za-z0-9_.+-]*$", word):
                found.append((number, word))
    return found


def programs_called(root=ROOT):
    """{program: ["file:line", ...]} for what the stages call."""
    calls = {}
    for rel in tracked_files(root):
        try:
            text = (root / rel).read_text()
        except UnicodeDecodeError:
            continue
        if NOT_SCANNED in text.splitlines():
            continue
        if rel == "Makefile":
            for number, name in recipe_programs(text):
                calls.setdefault(name, []).append("%s:%d" % (rel, number))
        for number, line in enumerate(text.splitlines(), 1):
            for pattern in PATTERNS:
                for name in pattern.findall(line):
                    calls.setdefault(name, []).append("%s:%d" % (rel, number))
    return calls


def setup_list(root=ROOT):
    """{program: package} from toolchain/host-packages' cmd: and path: checks."""
    given = {}
    for line in (root / "toolchain/host-packages").read_text().splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[0].startswith("#"):
            continue
        kind, _, what = fields[1].partition(":")
        if kind == "cmd":
            for name in what.split(","):
                given[name] = fields[2].replace(",", " ")
        elif kind == "path":
            given[os.path.basename(what)] = fields[2].replace(",", " ")
    return given


def base_system():
    """The programs of Debian's base system on this machine: packages dpkg marks Essential, or of
    priority required or important."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Essential}\t${Priority}\n"],
                         capture_output=True, text=True, check=True).stdout
    base = [p for p, essential, priority in (l.split("\t") for l in out.splitlines() if l.count("\t") == 2)
            if essential == "yes" or priority in ("required", "important")]
    files = subprocess.run(["dpkg", "-L", *base], capture_output=True, text=True).stdout
    paths = {os.path.realpath(f) for f in files.splitlines() if re.match(r"^(/usr)?/s?bin/[^/]+$", f)}
    names = {os.path.basename(f) for f in files.splitlines() if re.match(r"^(/usr)?/s?bin/[^/]+$", f)}
    # a name made by update-alternatives (awk -> /etc/alternatives/awk -> mawk) is the base system's
    # when the program it resolves to is
    for folder in ("/usr/bin", "/usr/sbin"):
        for name in os.listdir(folder):
            if os.path.realpath(os.path.join(folder, name)) in paths:
                names.add(name)
    return names


def providers(root=ROOT):
    given = {name: "toolchain/host-packages (%s)" % pkg for name, pkg in setup_list(root).items()}
    for name in base_system():
        given.setdefault(name, "Debian's base system")
    venv = root / ".venv/bin"
    for name in (os.listdir(venv) if venv.is_dir() else ()):
        given.setdefault(name, "the venv (requirements.txt)")
    for name in BUILT:
        given.setdefault(name, "built or unpacked by the project")
    for name, why in PREREQUISITES.items():
        given.setdefault(name, "prerequisite: " + why)
    for name, why in OPTIONAL.items():
        given.setdefault(name, "optional: " + why)
    return given


def unprovided(calls, given):
    return {name: places for name, places in sorted(calls.items()) if name not in given}


def main():
    calls, given = programs_called(), providers()
    width = max(map(len, calls))
    for name, places in sorted(calls.items()):
        print("%-*s  %-45s  %s" % (width, name, given.get(name, "NOBODY"), places[0]))
    missing = unprovided(calls, given)
    for name, places in missing.items():
        print("%s: called at %s, provided by nothing - add it to toolchain/host-packages"
              % (name, ", ".join(places[:3])), file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
