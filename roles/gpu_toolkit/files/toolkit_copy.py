#!/usr/bin/env python3
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA's toolkit installer, unmodified, on a copy of a node's /etc/containerd.

    toolkit_copy.py VERSION BIN_DIR CONFIG_DIR WORK [--oracle[=]NAME=CONTAINERD]... [--check]
    toolkit_copy.py --image VERSION BIN_DIR OUT NAME     the same container as an image spec
    toolkit_copy.py --env                                the Operator's environment for its Pod
    toolkit_copy.py --save SRC SAVE [NODE_STATUS] | --restore SAVE DEST   the node's config folder
                                                         kept (and what its containerd ran) / put back
    toolkit_copy.py --compare SAVE DEST                  what differs, file by file

Lays out WORK/rootfs as the GPU Operator's toolkit container sees its node (assets/state-container-
toolkit/0500_daemonset.yaml and transformForRuntime, NVIDIA/gpu-operator): the node's
/etc/containerd (a copy of CONFIG_DIR) mounted at /runtime/config-dir/ and its conf.d at
/runtime/config-dir.d/ (here: links to /etc/containerd), the installer's programs where that
version's image had them, the Operator's environment (RUNTIME=containerd, RUNTIME_CONFIG,
RUNTIME_DROP_IN_CONFIG and its host path, RUNTIME_SOCKET, CONTAINERD_RUNTIME_CLASS, ROOT,
TOOLKIT_PID_FILE, ...) with RUNTIME_RESTART_MODE=none and NO_DAEMON=true: a copy has no containerd
to restart and no Pod to wait in. Runs the installer chrooted there, then asks each --oracle
containerd (`containerd --config /etc/containerd/config.toml config dump`, chrooted too, so the
imports resolve as on the node) what its next start would load.

Prints one JSON object: the version, the program and environment run, its exit status and log,
each file of /etc/containerd before and after (a changed main config's dropped comments named),
and per oracle the runtimes and default runtime it loads (or its error). WORK/report.json keeps
it; a rerun that finds the same results (the log aside: the installer logs some lines in
Go's map order) changes nothing ("changed": false). --check works in a
temporary folder and writes nothing.

What is not NVIDIA's: the C pieces the installer copies (libnvidia-container*.so.1,
nvidia-container-cli) are stand-in files - they are C, not Go modules, and are never run here;
the runtime binaries it installs are the lab's v1.20.2 builds (toolchain/nvidia-container-toolkit)
for every version. A line of the installer's log that names them is the installer's own.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

# how each version's toolkit image ran its installer (the entrypoint, the folder of its helper
# programs): the lab's own toolkit (toolchain/nvidia-container-toolkit's pin, v1.18+) as LAB, the
# seed's versions by name (their own module folders)
LAB = "lab"
VERSIONS = {
    # cmd/nvidia-ctk-installer (v1.18+): the drop-in, /etc/containerd/conf.d/99-nvidia.toml
    LAB: {"entrypoint": ["/usr/bin/nvidia-ctk-installer"],
          "programs": {"/usr/bin/nvidia-ctk-installer": "nvidia-ctk-installer"}},
    # tools/container/nvidia-toolkit: toolkit install and the runtime's setup in one program
    "v1.17.8": {"entrypoint": ["/usr/bin/nvidia-toolkit"],
                "programs": {"/usr/bin/nvidia-toolkit": "nvidia-toolkit-v1.17.8"}},
    # tools/container/nvidia-toolkit runs `toolkit install` and `containerd setup` by name (sh -c),
    # from the image's /work on PATH
    "v1.16.2": {"entrypoint": ["/work/nvidia-toolkit"],
                "programs": {"/work/nvidia-toolkit": "nvidia-toolkit-v1.16.2",
                             "/work/toolkit": "nvidia-toolkit-toolkit-v1.16.2",
                             "/work/containerd": "nvidia-toolkit-containerd-v1.16.2"}},
}


def lab_version(bin_dir):
    """The version of the lab's nvidia-ctk-installer build (its --version), e.g. v1.20.2, or None."""
    binary = os.path.join(bin_dir, "nvidia-ctk-installer")
    if not os.access(binary, os.X_OK):
        return None
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    found = re.search(r"version (\d+\.\d+\.\d+)", out)
    return "v" + found.group(1) if found else None


def era(version, bin_dir):
    """The VERSIONS key of a version: one of the seed's, or the lab's installer's own version."""
    if version in VERSIONS and version != LAB:
        return version
    if version == lab_version(bin_dir):
        return LAB
    return None


# what the installers copy into the toolkit's folder: the lab's v1.20.2 builds of the Go programs
ARTIFACTS = ["nvidia-ctk", "nvidia-cdi-hook", "nvidia-container-runtime", "nvidia-container-runtime.cdi",
             "nvidia-container-runtime.legacy", "nvidia-container-runtime-hook"]
STAND_IN_CLI = ("#!/bin/sh\necho 'stand-in for nvidia-container-cli (libnvidia-container is C, not built by "
                "the lab; docs/toolkit.md)' >&2\nexit 1\n")
STAND_IN_LIB = "stand-in for {name} (libnvidia-container is C, not built by the lab; docs/toolkit.md)\n"
LIB_DIR = "/usr/lib/x86_64-linux-gnu"
# the GPU Operator's toolkit container (0500_daemonset.yaml, transformForRuntime for containerd)
OPERATOR_ENV = {
    "ROOT": "/usr/local/nvidia",
    "NVIDIA_CONTAINER_RUNTIME_MODES_CDI_DEFAULT_KIND": "management.nvidia.com/gpu",
    "NVIDIA_VISIBLE_DEVICES": "void",
    "TOOLKIT_PID_FILE": "/run/nvidia/toolkit/toolkit.pid",
    "RUNTIME": "containerd",
    "CONTAINERD_RUNTIME_CLASS": "nvidia",
    "RUNTIME_CONFIG": "/runtime/config-dir/config.toml",
    "CONTAINERD_CONFIG": "/runtime/config-dir/config.toml",
    "RUNTIME_DROP_IN_CONFIG": "/runtime/config-dir.d/99-nvidia.toml",
    "RUNTIME_DROP_IN_CONFIG_HOST_PATH": "/etc/containerd/conf.d/99-nvidia.toml",
    "RUNTIME_SOCKET": "/runtime/sock-dir/containerd.sock",
    "CONTAINERD_SOCKET": "/runtime/sock-dir/containerd.sock",
    # the copy: nothing to restart, nothing to wait for
    "RUNTIME_RESTART_MODE": "none",
    "NO_DAEMON": "true",
    # the artifacts where this lab's image has them (the installer's own flag)
    "TOOLKIT_SOURCE_ROOT": "/",
}


class Refused(Exception):
    """Bad input: said in one line, nothing written."""


def libc_files():
    """The dynamic loader and C library the cgo-built programs (and sh) need."""
    out = {}
    for path in ("/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6"):
        if not os.path.exists(path):
            raise Refused("%s is missing: the installers (built with cgo) need this machine's C library" % path)
        out[path] = os.path.realpath(path)
    return out


def put(rootfs, path, src=None, text=None, mode=0o755):
    dest = os.path.join(rootfs, path.lstrip("/"))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if src is not None:
        shutil.copyfile(src, dest)
    else:
        with open(dest, "w") as f:
            f.write(text)
    os.chmod(dest, mode)


def read_tree(folder):
    """Every regular file under folder, by its path relative to it, as text."""
    files = {}
    for base, _, names in os.walk(folder):
        for name in sorted(names):
            full = os.path.join(base, name)
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, encoding="utf-8", errors="replace") as f:
                    files[os.path.relpath(full, folder)] = f.read()
    return files


def copy_config(config_dir, dest):
    """CONFIG_DIR's .toml files into the copy; a path naming CONFIG_DIR names /etc/containerd (the
    node's view of it, as the lab's node_view.py makes it)."""
    if not os.path.isdir(config_dir):
        raise Refused("%s is not a folder: name the node's containerd config folder (its /etc/containerd)"
                      % config_dir)
    if not os.path.isfile(os.path.join(config_dir, "config.toml")):
        raise Refused("%s has no config.toml: the installer reads and rewrites the main config there"
                      % config_dir)
    src = os.path.realpath(config_dir)
    for base, _, names in os.walk(src):
        for name in names:
            if not name.endswith(".toml"):
                continue
            full = os.path.join(base, name)
            rel = os.path.relpath(full, src)
            with open(full, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if src != "/etc/containerd":
                text = text.replace(src + "/", "/etc/containerd/").replace(config_dir.rstrip("/") + "/", "/etc/containerd/")
            put(dest, rel, text=text, mode=0o644)


def image_layout(rootfs, version, bin_dir):
    """The toolkit container's own files: the installer's programs where that version's image had
    them, what it installs, the stand-in C pieces, the C library and sh."""
    spec = VERSIONS[era(version, bin_dir)]
    for path, name in sorted(spec["programs"].items()):
        binary = os.path.join(bin_dir, name)
        if not os.access(binary, os.X_OK):
            raise Refused("%s is not built: run toolchain/build.sh %s %s (or playbooks/toolkit.yml, which builds it)"
                          % (binary, name, bin_dir))
        put(rootfs, path, src=binary)
    for name in ARTIFACTS:
        binary = os.path.join(bin_dir, name)
        if not os.access(binary, os.X_OK):
            raise Refused("%s is not built: run toolchain/build.sh %s %s" % (binary, name, bin_dir))
        put(rootfs, "/usr/bin/" + name, src=binary)
    put(rootfs, "/usr/bin/nvidia-container-cli", text=STAND_IN_CLI)
    for lib in ("libnvidia-container.so.1", "libnvidia-container-go.so.1"):
        real = lib + "." + version.lstrip("v")
        put(rootfs, LIB_DIR + "/" + real, text=STAND_IN_LIB.format(name=lib), mode=0o644)
        os.symlink(real, os.path.join(rootfs, LIB_DIR.lstrip("/"), lib))
    for path, real in libc_files().items():
        put(rootfs, path, src=real)
    put(rootfs, "/bin/sh", src=os.path.realpath(shutil.which("dash") or "/bin/sh"))


def layout(rootfs, version, bin_dir, config_dir, oracles):
    """The copy: the container's files, the node's /etc/containerd mounted as the Operator mounts it."""
    image_layout(rootfs, version, bin_dir)
    for name, binary in oracles:
        put(rootfs, "/oracle/%s/containerd" % name, src=binary)
    copy_config(config_dir, os.path.join(rootfs, "etc/containerd"))
    os.makedirs(os.path.join(rootfs, "runtime/sock-dir"), exist_ok=True)
    os.symlink("/etc/containerd", os.path.join(rootfs, "runtime/config-dir"))
    os.makedirs(os.path.join(rootfs, "etc/containerd/conf.d"), exist_ok=True)
    os.symlink("/etc/containerd/conf.d", os.path.join(rootfs, "runtime/config-dir.d"))
    for folder in ("run/nvidia/toolkit", "usr/local/nvidia", "tmp", "dev"):
        os.makedirs(os.path.join(rootfs, folder), exist_ok=True)
    # Go's os/exec opens /dev/null for a child's missing stdin (v1.16.2 runs its helpers so)
    try:
        os.mknod(os.path.join(rootfs, "dev/null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chmod(os.path.join(rootfs, "dev/null"), 0o666)
    except OSError as exc:
        raise Refused("cannot make the copy's /dev/null (%s): the installer's helpers need it; run as root "
                      "on a filesystem that allows device nodes (WORK on another folder)" % exc.strerror)


def chrooted(rootfs, argv, env, timeout=120):
    chroot = shutil.which("chroot", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/bin:/bin")
    if not chroot:
        raise Refused("chroot (coreutils) is not on this machine: the installer runs chrooted in a copy of its container")
    return subprocess.run([chroot, rootfs] + argv, env=env, capture_output=True, text=True, timeout=timeout)


LOG_TIME = re.compile(r'^time="[^"]*" ')


def comments(text):
    return [line.strip() for line in text.splitlines() if line.strip().startswith("#")]


def runtimes_of(dump):
    """The runtimes and the default runtime in a config dump (version 2 or 3 tables)."""
    # 1.x dumps version 2 (plugins."io.containerd.grpc.v1.cri"), 2.x version 3 with literal strings
    # (plugins.'io.containerd.cri.v1.runtime'); a bare runtime name has no dot (TOML), a quoted one may
    names = sorted(set(re.findall(r'^\s*\[plugins\.(?:"io\.containerd\.grpc\.v1\.cri"|\'io\.containerd\.grpc\.v1\.cri\''
                                  r'|"io\.containerd\.cri\.v1\.runtime"|\'io\.containerd\.cri\.v1\.runtime\')\.containerd'
                                  r'\.runtimes\.([A-Za-z0-9_-]+|"[^"]+"|\'[^\']+\')\]\s*$', dump, re.M)))
    default = re.search(r'^\s*default_runtime_name\s*=\s*["\']([^"\']*)["\']', dump, re.M)
    return [n.strip("\"'") for n in names], default.group(1) if default else None


def run(version, bin_dir, config_dir, rootfs, oracles):
    layout(rootfs, version, bin_dir, config_dir, oracles)
    before = read_tree(os.path.join(rootfs, "etc/containerd"))
    spec = VERSIONS[era(version, bin_dir)]
    env = dict(OPERATOR_ENV, PATH="/work:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    done = chrooted(rootfs, spec["entrypoint"], env)
    after = read_tree(os.path.join(rootfs, "etc/containerd"))
    files = {}
    for rel in sorted(set(before) | set(after)):
        was, now = before.get(rel), after.get(rel)
        entry = {"before": was, "after": now, "changed": was != now}
        if was is not None and now is not None and was != now:
            entry["comments_dropped"] = [c for c in comments(was) if c not in comments(now)]
        files["/etc/containerd/" + rel] = entry
    loaded = {}
    for name, _ in oracles:
        dump = chrooted(rootfs, ["/oracle/%s/containerd" % name, "--config", "/etc/containerd/config.toml",
                                 "config", "dump"], {"PATH": "/usr/bin:/bin"}, timeout=60)
        if dump.returncode != 0:
            loaded[name] = {"error": (dump.stderr.strip() or dump.stdout.strip())[-600:] or
                            "exit status %d" % dump.returncode}
        else:
            names, default = runtimes_of(dump.stdout)
            loaded[name] = {"runtimes": names, "default_runtime_name": default,
                            "serves_cri": default in names}
    log = [LOG_TIME.sub("", line) for line in (done.stdout + done.stderr).splitlines()]
    return {
        "version": version,
        "entrypoint": spec["entrypoint"],
        "programs": {path: os.path.join(bin_dir, name) for path, name in sorted(spec["programs"].items())},
        "environment": {k: v for k, v in sorted(env.items()) if k != "PATH"},
        "rc": done.returncode,
        "log": [line for line in log if line.strip()],
        "restart": next((line for line in log if "restart" in line.lower() and "containerd" in line.lower()), ""),
        "files": files,
        "written": [path for path, entry in files.items() if entry["changed"]],
        "loaded": loaded,
    }


def image(version, bin_dir, out, name):
    """--image: the container's files as an image spec for the lab's oci_image.py (OUT/image.json,
    OUT/rootfs), the entrypoint that version's image ran."""
    if era(version, bin_dir) is None:
        raise Refused("toolkit version %s is not one built here" % version)
    rootfs = os.path.join(out, "rootfs")
    shutil.rmtree(rootfs, ignore_errors=True)
    image_layout(rootfs, version, bin_dir)
    files, links = {}, {}
    for base, dirs, names in os.walk(rootfs):
        for entry in sorted(dirs + names):
            full = os.path.join(base, entry)
            path = "/" + os.path.relpath(full, rootfs)
            if os.path.islink(full):
                links[path] = os.readlink(full)
            elif os.path.isfile(full):
                files[path] = full
    spec = [{"names": [name], "files": files, "symlinks": links,
             "entrypoint": VERSIONS[era(version, bin_dir)]["entrypoint"]}]
    with open(os.path.join(out, "image.json"), "w") as f:
        json.dump(spec, f, indent=1, sort_keys=True)
        f.write("\n")
    # the Operator's environment for the Pod: the copy's own settings (no daemon, no restart) left to it
    env = {k: v for k, v in OPERATOR_ENV.items() if k not in ("NO_DAEMON", "RUNTIME_RESTART_MODE")}
    return {"image": name, "spec": os.path.join(out, "image.json"), "entrypoint": spec[0]["entrypoint"],
            "environment": env}


def save(src, dest, node_status=None):
    """--save: the node's containerd config folder as it is, before the installer writes into it
    (its files byte for byte, modes kept). A save that exists is kept: it holds the files from
    before the first run. NODE_STATUS (real-node.sh status's JSON) adds what the node's containerd
    ran then and how it had started - SAVE.node.json, beside the folder, which stays the node's
    files alone: state=absent compares containerd with it after the installer's cleanup. Returns
    whether it saved."""
    if os.path.exists(dest):
        return False
    if not os.path.isdir(src):
        raise Refused("%s is not a folder: the node's containerd config folder to save" % src)
    record = None
    if node_status is not None:
        try:
            status = json.loads(node_status)
        except ValueError as exc:
            raise Refused("the node's status is not JSON (%s): pass real-node.sh status's output" % exc) from None
        if not isinstance(status, dict) or not isinstance(status.get("runtimes_running"), list):
            raise Refused("the node's status names no runtimes_running: is containerd answering (real-node.sh status)?")
        record = {"runtimes_running": sorted(status["runtimes_running"]),
                  "default_runtime": status.get("default_runtime"),
                  "boot_mode": (status.get("boot") or {}).get("mode")}
    tmp = dest + ".saving"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, symlinks=True)
    if record is not None:   # first, so that a save folder always has its record
        with open(dest + ".node.json.tmp", "w") as f:
            json.dump(record, f, sort_keys=True)
            f.write("\n")
        os.replace(dest + ".node.json.tmp", dest + ".node.json")
    os.replace(tmp, dest)
    return True


def restore(saved, dest):
    """--restore: DEST's files made those of SAVED again, byte for byte: changed and missing files
    written, files SAVED does not have removed (a drop-in the installer left). Returns what changed."""
    if not os.path.isdir(saved):
        raise Refused("%s does not exist: nothing was saved, nothing to restore" % saved)
    want, have = read_bytes(saved), read_bytes(dest) if os.path.isdir(dest) else {}
    changed = []
    for rel in sorted(set(have) - set(want)):
        os.remove(os.path.join(dest, rel))
        changed.append("removed " + rel)
    for rel, (data, mode) in sorted(want.items()):
        if have.get(rel) != (data, mode):
            target = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target + ".restoring", "wb") as f:
                f.write(data)
            os.chmod(target + ".restoring", mode)
            os.replace(target + ".restoring", target)
            changed.append(("restored " if rel in have else "put back ") + rel)
    return changed


def read_bytes(folder):
    out = {}
    for base, _, names in os.walk(folder):
        for name in names:
            full = os.path.join(base, name)
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, "rb") as f:
                    out[os.path.relpath(full, folder)] = (f.read(), os.stat(full).st_mode & 0o7777)
    return out


def compare(saved, folder):
    """--compare: what differs in FOLDER from SAVED, file by file (changed, new, removed)."""
    want, have = read_bytes(saved), read_bytes(folder)
    return ["changed " + r for r in sorted(set(want) & set(have)) if want[r] != have[r]] + \
        ["new " + r for r in sorted(set(have) - set(want))] + ["removed " + r for r in sorted(set(want) - set(have))]


def main(argv):
    if argv[:1] == ["--compare"] and len(argv) == 3:
        print(json.dumps({"files": compare(argv[1], argv[2])}))
        return 0
    if argv[:1] in (["--save"], ["--restore"]) and len(argv) == 3 or argv[:1] == ["--save"] and len(argv) == 4:
        try:
            if argv[0] == "--save":
                print(json.dumps({"changed": save(argv[1], argv[2], *argv[3:]), "saved": argv[2]}))
            else:
                changed = restore(argv[1], argv[2])
                print(json.dumps({"changed": bool(changed), "files": changed}))
            return 0
        except (Refused, OSError) as exc:
            print(json.dumps({"failed": True, "msg": "%s %s: %s" % (argv[0][2:], argv[1], exc)}))
            return 1
    if argv == ["--env"]:   # the Operator's environment for a Pod (the copy's own settings left out)
        print(json.dumps({k: v for k, v in OPERATOR_ENV.items() if k not in ("NO_DAEMON", "RUNTIME_RESTART_MODE")}))
        return 0
    if argv[:1] == ["--image"] and len(argv) == 5:
        try:
            os.makedirs(argv[3], exist_ok=True)
            print(json.dumps(image(argv[1], os.path.abspath(argv[2]), argv[3], argv[4])))
            return 0
        except (Refused, OSError) as exc:
            print(json.dumps({"failed": True, "msg": "the toolkit image %s: %s" % (argv[4], exc)}))
            return 1
    check = "--check" in argv
    oracles = []
    rest = []
    i = 0
    while i < len(argv):
        if argv[i] == "--oracle" and i + 1 < len(argv) or argv[i].startswith("--oracle="):
            value = argv[i].partition("=")[2] if argv[i].startswith("--oracle=") else argv[i + 1]
            name, _, binary = value.partition("=")
            oracles.append((name, binary))
            i += 1 if argv[i].startswith("--oracle=") else 2
            continue
        if argv[i] != "--check":
            rest.append(argv[i])
        i += 1
    if len(rest) != 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    version, bin_dir, config_dir, work = rest
    try:
        if era(version, bin_dir) is None:
            known = [lab_version(bin_dir) or "the lab's (nvidia-ctk-installer, not built yet)"] + \
                [v for v in VERSIONS if v != LAB]
            raise Refused("toolkit version %s is not one built here: %s (the lab's toolkit, the seed's v1.17.x as "
                          "v1.17.8, the seed's v1.16.2)" % (version, ", ".join(known)))
        for name, binary in oracles:
            if not name or not os.access(binary, os.X_OK):
                raise Refused("--oracle %s=%s: not an executable containerd" % (name, binary))
        if not os.path.isfile(os.path.join(config_dir, "config.toml")):
            raise Refused("%s has no config.toml: name the node's containerd config folder (its /etc/containerd); "
                          "the installer reads and rewrites the main config there" % config_dir)
        if os.geteuid() != 0:
            raise Refused("the installer runs chrooted in a copy of its container: this needs root")
        if not check:
            os.makedirs(work, exist_ok=True)
        parent = tempfile.mkdtemp(prefix="toolkit-copy-", dir=None if check else work)
        try:
            report = run(version, os.path.abspath(bin_dir), config_dir, os.path.join(parent, "rootfs"), oracles)
            report_path = os.path.join(work, "report.json")
            old = None
            if os.path.isfile(report_path):
                with open(report_path) as f:
                    try:
                        old = json.load(f)
                    except ValueError:
                        old = None   # an unreadable report is replaced
            # the log is not compared: the installer logs some lines in Go's map order
            report["changed"] = old is None or {k: v for k, v in old.items() if k != "log"} != \
                {k: v for k, v in report.items() if k != "log"}
            if not check and report["changed"]:
                rootfs = os.path.join(work, "rootfs")
                shutil.rmtree(rootfs, ignore_errors=True)
                os.replace(os.path.join(parent, "rootfs"), rootfs)
                tmp = report_path + ".tmp"
                with open(tmp, "w") as f:
                    json.dump({k: v for k, v in report.items() if k != "changed"}, f, indent=1, sort_keys=True)
                    f.write("\n")
                os.replace(tmp, report_path)
        finally:
            shutil.rmtree(parent, ignore_errors=True)
    except Refused as exc:
        print(json.dumps({"failed": True, "msg": str(exc)}))
        return 1
    except (OSError, subprocess.SubprocessError) as exc:
        print(json.dumps({"failed": True, "msg": "running NVIDIA's installer %s on a copy of %s failed: %s"
                          % (version, config_dir, exc)}))
        return 1
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
