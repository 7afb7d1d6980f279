#!/usr/bin/env bash
# The lab's real node: a real containerd and kubelet on this machine, isolated per cluster.
#
#   real-node.sh converge STATE   bring the node to the incident's end state (say what was done)
#   real-node.sh reboot STATE     the next reboot: everything stops, starts from the files on disk
#   real-node.sh restart-containerd STATE [restart|incident]   containerd alone restarts, loading every file (incident: the main config alone, the drop-ins after)
#   real-node.sh status STATE     what runs (JSON), changes nothing
#   real-node.sh supervise STATE containerd always [SECONDS] | no
#                                 containerd's supervisor restarts it when it ends on its own
#                                 (containerd.service's Restart=always, RestartSec=5), or not
#   real-node.sh down STATE       stop everything, remove namespaces, veth, cgroups, mounts
#   real-node.sh exec STATE CMD.. run CMD on the node (its mount and network namespace, its PATH)
#   real-node.sh gpu-refresh STATE  the GPU half's files anew from the mock's GPUs now (the CDI
#                                 spec, the files beside NVML) - after a MIG layout changed
#   real-node.sh probe            can this machine run a real node? one line: ok | no: WHY
#
# STATE is the node's own folder; STATE/node.env (written by the role) names everything else.
# Isolation: the node has a network namespace of its own (a veth pair with a /30 of
# 10.213.0.0/16 chosen per cluster, no default route) and a private mount namespace in which the
# lab folder stands for the node's / (/etc/containerd is the node's view of
# LAB/etc/containerd, /var/lib/kubelet, /var/lib/containerd, /run/containerd, /etc/cni/net.d and
# /opt/cni/bin are folders under STATE). Every process of the node - containerd, its shims, the
# kubelet and every container - runs in the cgroup /gpu-incident-lab-<id> (all hierarchies), so
# stopping the node is "kill what is in that cgroup". Nothing is written to the host's
# /etc/containerd, /var/lib/kubelet, /etc/cni or /opt/cni.
set -eEuo pipefail

cmd=${1:?usage: real-node.sh converge|reboot|restart-containerd|status|supervise|down|exec|gpu-refresh|probe STATE}
# The node's helpers (nodebin/*.py, the standard library only) run with the system's Python 3
# where there is one: `python3` from PATH may be a pyenv shim, ~0.1 s of CPU a call against
# ~0.01 s - and every exec and status calls one (bench/README.md, session 14)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# No silent exit (issue 47). A command that fails where set -e would stop the run ends it with one
# JSON line on stdout - the command, its line, the functions it ran in, its status and the last
# lines the run wrote to stderr - as die() does for the refusals the script knows. The trap acts
# in the script's own shell only: inside $(...) or a pipeline a failure is the caller's to judge
# (its status reaches the line that used it, and the trap names that line). Each run's stderr is
# also kept in a file of its own (RUN_ERR, through tee) so the message can quote it; `exec` hands
# its command the caller's stdout and stderr and passes its status through untouched. Background
# processes started here close fds 8 and 9 (the caller's stdout and stderr): a daemon holding one
# would keep the caller (ansible's command module) waiting for its end.
RUN_ERR=""
TEE_PID=""
run_err_close() { # the run's stderr file complete: stderr back to the caller's, tee drained (2 s)
  [ -n "$TEE_PID" ] || return 0
  exec 2>&9
  local _ state
  for _ in $(seq 1 20); do   # poll interval 0.1 s of this bounded wait for tee to drain (2 s)
    state=$(awk '{print $3}' "/proc/$TEE_PID/stat" 2>/dev/null || echo gone)
    case "$state" in Z|gone) break ;; esac
    sleep 0.1
  done
  TEE_PID=""
}
on_err() { # STATUS LINE COMMAND: the trap of a failing command in this shell
  [ "$BASHPID" = "$$" ] || return 0
  trap - ERR
  set +e
  local status=$1 line=$2 command=$3
  local f where=""
  for f in "${FUNCNAME[@]:1}"; do [ "$f" = main ] || where+="${where:+ <- }$f"; done
  run_err_close
  # inline, not a nodebin helper: the message must come even when the node's helpers are broken
  # shellcheck disable=SC2016
  "$PY" -c '
import json, sys
cmd, status, line, command, where, err_file = sys.argv[1:7]
try:
    with open(err_file, errors="replace") as handle:
        lines = [l.rstrip() for l in handle.read().splitlines() if l.strip()]
except OSError:
    lines = []
stderr = lines[-8:]
msg = "real-node.sh %s failed at line %s%s: `%s` ended with status %s" % (
    cmd, line, " (in %s)" % where if where else "", command, status)
msg += "; its last stderr lines: " + " / ".join(stderr) if stderr else "; it wrote nothing to stderr"
print(json.dumps({"failed": True, "msg": msg, "command": command, "line": int(line), "status": int(status),
                  "function": where, "stderr": stderr}))
' "$cmd" "$status" "$line" "$command" "$where" "${RUN_ERR:-/dev/null}" >&8
  exit "$status"
}
trap 'on_err $? $LINENO "$BASH_COMMAND"' ERR
exec 8>&1   # the JSON line's way out, wherever the failing command's own stdout went
if [ "$cmd" != probe ]; then
  RUN_ERR=$(mktemp "${TMPDIR:-/tmp}/real-node-$cmd.XXXXXX")
  exec 9>&2 2> >(tee -a "$RUN_ERR" >&9 9>&-)
  TEE_PID=$!
  trap 'run_err_close; rm -f "$RUN_ERR"' EXIT
fi

probe() {
  [ "$(id -u)" = 0 ] || { echo "no: not root (a real node needs root for namespaces and cgroups)"; return; }
  { command -v nsenter && command -v unshare && command -v ip; } >/dev/null ||
    { echo "no: nsenter, unshare or ip (util-linux, iproute2) missing"; return; }
  [ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] ||
    { echo "no: no cgroup filesystem under /sys/fs/cgroup"; return; }
  local t="gil-probe-$$"
  ip netns add "$t" 2>/dev/null || { echo "no: cannot create a network namespace (ip netns add)"; return; }
  ip netns del "$t"
  unshare --mount --propagation private true 2>/dev/null || { echo "no: cannot create a mount namespace (unshare --mount)"; return; }
  echo ok
}
if [ "$cmd" = probe ]; then probe; exit 0; fi

S=${2:?state folder}
if [ ! -r "$S/node.env" ]; then   # no node was ever set up here
  case "$cmd" in
    status|down) echo '{"exists": false, "holder": false, "containerd": false, "kubelet": false, "changed": false, "actions": []}'; exit 0 ;;
    *) echo "real-node: no real node in $S (run lab.yml first)" >&2; exit 1 ;;
  esac
fi
# shellcheck disable=SC1091
source "$S/node.env"
# node.env: NODE_NAME CLUSTER_ID HOST_IP NODE_IP LAB_ROOT KUBECONFIG_ADMIN PKI_DIR BIN_DIR KUBELET
#           PACKAGES_DIR TOOLCHAIN_DIR CONTAINERD_VERSION CONTAINERD_BIN_DIR NODE_LABELS IMAGES_TAR WAIT_TIMEOUT
NETNS=gil-$CLUSTER_ID
VETH_HOST=gil${CLUSTER_ID}h
VETH_NODE=gil${CLUSTER_ID}n
CG=gpu-incident-lab-$CLUSTER_ID
# Machine adaptations of the node's view of LAB/etc/containerd (README: what is real): without
# systemd, runc cannot use the systemd cgroup driver (SystemdCgroup = true -> false); where the
# kernel refuses a negative oom_score_adj (runc: "can't get final child's PID from pipe: EOF"),
# the CRI table gets restrict_oom_score_adj = true. Nothing else of the files is touched.
VIEW_REWRITE_SYSTEMD=false
[ -d /run/systemd/system ] || VIEW_REWRITE_SYSTEMD=true
VIEW_RESTRICT_OOM=false
sh -c 'echo -1 > /proc/self/oom_score_adj' 2>/dev/null || VIEW_RESTRICT_OOM=true
VIEW_FLAGS="systemd-cgroup-false=$VIEW_REWRITE_SYSTEMD,restrict-oom=$VIEW_RESTRICT_OOM"
export VIEW_FLAGS
NODE_PATH=$S/nodebin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
actions=()
KUBELET_STARTED=""

say() { actions+=("$*"); echo "real-node: $*" >&2; }
die() { echo "real-node: $*" >&2; printf '{"failed": true, "msg": %s}\n' "$(json_str "$*")" >&8; exit 1; }
json_str() { "$PY" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }   # works before nodebin exists

alive() { # pidfile [expected-substring-of-cmdline]
  local p
  p=$(cat "$S/$1.pid" 2>/dev/null) || return 1
  [ -n "$p" ] && [ -d "/proc/$p" ] || return 1
  [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] || return 1
  [ -z "${2:-}" ] || tr '\0' ' ' < "/proc/$p/cmdline" | grep -F -- "$2" > /dev/null
}

cgroup_dirs() { # every hierarchy's folder of the node's cgroup
  local d
  for d in /sys/fs/cgroup/*/; do
    [ -f "$d/cgroup.procs" ] || continue
    echo "${d%/}/$CG"
  done
  [ -f /sys/fs/cgroup/cgroup.controllers ] && echo "/sys/fs/cgroup/$CG"
  return 0
}

cgroup_create() { # the node's cgroup in every hierarchy, and its sub-cgroup "system"
  local d parent
  : > "$S/cgroup-procs.list"
  while read -r d; do
    echo "$d/system/cgroup.procs" >> "$S/cgroup-procs.list"
    for sub in "$d" "$d/system"; do
      mkdir -p "$sub"
      if [ -f "$sub/cpuset.cpus" ] && [ -z "$(cat "$sub/cpuset.cpus")" ]; then
        parent=$(dirname "$sub")
        cat "$parent/cpuset.cpus" > "$sub/cpuset.cpus"
        cat "$parent/cpuset.mems" > "$sub/cpuset.mems"
      fi
    done
  done < <(cgroup_dirs)
}

cgroup_join() { # move process $1 into the node's system cgroup everywhere
  local d
  while read -r d; do
    if [ -d "$d/system" ]; then echo "$1" > "$d/system/cgroup.procs" 2>/dev/null || true; fi
  done < <(cgroup_dirs)
}

cgroup_pids() { # every process in the node's cgroup tree (one hierarchy is enough: all are joined)
  local d
  d=$(cgroup_dirs | grep -E '/(pids|memory|unified)/' | head -1)
  [ -n "$d" ] && [ -d "$d" ] || d="/sys/fs/cgroup/pids/$CG"
  [ -d "$d" ] || return 0
  # a container's cgroup can go while the tree is read (runc delete after a kill, the kubelet's pod
  # cgroups): `find -exec cat` then failed and, under set -e, the reboot exited 1 saying nothing
  # (issue 47). node_state.py skips what went (it held no process) and names any other error.
  "$PY" "$S/nodebin/node_state.py" cgroup-pids "$d"
}

kill_all() { # every process of the node, then wait until none is left
  local pids
  for _ in $(seq 1 100); do
    pids=$(cgroup_pids)
    for f in holder forward; do
      alive "$f" && pids+=" $(cat "$S/$f.pid")"
    done
    [ -n "${pids// /}" ] || return 0
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null || true
    sleep 0.1   # poll interval of this bounded wait (100 rounds) for the processes to be gone
  done
  die "processes of the node did not exit: $(cgroup_pids | tr '\n' ' ')"
}

cgroup_remove() {
  local d
  while read -r d; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done < <(cgroup_dirs)
}

OWNERS=/run/gpu-incident-lab

names_ours() { # refuse names or addresses that another lab holds (never take them over)
  local owner holder
  mkdir -p "$OWNERS"
  owner=$(cat "$OWNERS/$NETNS.owner" 2>/dev/null || true)
  if [ -n "$owner" ] && [ "$owner" != "$S" ]; then
    holder=$(cat "$owner/holder.pid" 2>/dev/null || true)
    if [ -n "$holder" ] && [ -d "/proc/$holder" ]; then
      die "the names of this node ($NETNS, $VETH_HOST, cgroup $CG) belong to another lab's running node ($owner); this lab's state folder is $S - give this lab another cluster name or state folder (lab_state_dir), or stop that lab with its own teardown"
    fi
  fi
  if ! ip link show "$VETH_HOST" >/dev/null 2>&1; then
    local taken
    taken=$(ip -o -4 addr show | awk -v a="$HOST_IP" -v b="$NODE_IP" '{split($4, ip, "/"); if (ip[1] == a || ip[1] == b) print $2 " " $4}' | head -1)
    [ -z "$taken" ] || die "the node's addresses $HOST_IP/$NODE_IP (chosen from this lab's state folder $S) are already on interface ${taken% *} (${taken#* }): another lab or a network of this machine holds them; give this lab another cluster name or state folder"
  fi
  [ "$owner" = "$S" ] || printf '%s\n' "$S" > "$OWNERS/$NETNS.owner"
}

net_up() {
  names_ours
  if ! ip netns list | grep -w "$NETNS" > /dev/null; then
    ip netns add "$NETNS"
    say "network namespace $NETNS created"
  fi
  if ! ip link show "$VETH_HOST" >/dev/null 2>&1; then
    ip link add "$VETH_HOST" type veth peer name "$VETH_NODE"
    ip link set "$VETH_NODE" netns "$NETNS"
    ip addr add "$HOST_IP/30" dev "$VETH_HOST"
    ip link set "$VETH_HOST" up
    ip -n "$NETNS" addr add "$NODE_IP/30" dev "$VETH_NODE"
    ip -n "$NETNS" link set "$VETH_NODE" up
    ip -n "$NETNS" link set lo up
    say "veth $VETH_HOST ($HOST_IP) <-> $VETH_NODE ($NODE_IP) in $NETNS, no default route"
  fi
}

in_node() { # run in the node's mount and network namespace (the holder's)
  nsenter --target "$(cat "$S/holder.pid")" --mount --net -- env -i HOME=/root PATH="$NODE_PATH" "$@"
}

view_sync() { # main|all: the node's /etc/containerd from LAB/etc/containerd (nodebin/node_view.py)
  "$PY" "$S/nodebin/node_view.py" "$LAB_ROOT/etc/containerd" "$S/etc-containerd" "$1" "$LAB_ROOT" \
    "$VIEW_REWRITE_SYSTEMD" "$VIEW_RESTRICT_OOM"
}

mounts_script() { # what the holder sets up in its fresh mount namespace
  cat <<EOF
set -e
mount --make-rprivate /
for d in etc usr opt var; do
  mkdir -p "$S/ov/\$d/up" "$S/ov/\$d/work"
  mount -t overlay overlay -o "lowerdir=/\$d,upperdir=$S/ov/\$d/up,workdir=$S/ov/\$d/work" "/\$d"
done
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /etc/containerd /etc/cni/net.d /opt/cni/bin /var/lib/containerd /var/lib/kubelet /run/containerd
mount --bind "$S/etc-containerd" /etc/containerd
mount --bind "$S/cni/net.d" /etc/cni/net.d
mount --bind "$S/cni/bin" /opt/cni/bin
mount --bind "$S/containerd-root" /var/lib/containerd
mount --bind "$S/kubelet" /var/lib/kubelet
mount --bind "$S/run-containerd" /run/containerd
printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\n' > /etc/crictl.yaml
EOF
  if [ "${GPU_STACK:-none}" = nvidia ]; then gpu_mounts_script; else
    echo "install -m 0755 \"$S/nodebin/nvidia-container-runtime\" /usr/bin/nvidia-container-runtime"
  fi
  # the node's / is shared within its own mount namespace (as on a systemd host; the namespace
  # was made private from the host's first, so nothing propagates out): the kubelet's
  # mountPropagation (HostToContainer, Bidirectional) needs it - containerd refuses it otherwise
  echo "mount --make-rshared /"
  echo "exec \"$S/nodebin/pause\""
}

gpu_mounts_script() { # the GPU half of the node's view (lab_gpu_stack=nvidia, docs/gpu-stack.md)
  cat <<EOF
# /dev: the host's devices plus the GPU's own nodes, which exist in the node's view alone (an
# overlay: nothing is created in the host's /dev); its own ptys, shared memory and mqueue
mkdir -p "$S/ov/dev/up" "$S/ov/dev/work"
mount -t overlay overlay -o "lowerdir=/dev,upperdir=$S/ov/dev/up,workdir=$S/ov/dev/work" /dev
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
mount --bind /dev/pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
mount -t mqueue mqueue /dev/mqueue 2>/dev/null || true
i=0
while [ "\$i" -lt $GPU_COUNT ]; do mknod -m 0666 "/dev/nvidia\$i" c 195 "\$i"; i=\$((i + 1)); done
mknod -m 0666 /dev/nvidiactl c 195 255
mknod -m 0666 /dev/nvidia-uvm c $GPU_UVM_MAJOR 0
mknod -m 0666 /dev/nvidia-uvm-tools c $GPU_UVM_MAJOR 1
# the driver as installed on a GPU node: libnvidia-ml.so.1 (the project's MOCK NVML) and
# nvidia-smi (the project's reader of it); its configuration is the node's gpu/mock/nvml-mock.conf:
# the folder is bound (a file rewritten by rename would leave a bound file behind), the library's
# neighbour links into it relatively (the plugin sees the node's / under /driver-root)
cp -a "$GPU_DRIVER_ROOT/usr/." /usr/
# ... laid out as NVIDIA's driver installs it: the library under its version's name, .so.1 a link
# to it - NVIDIA's CDI generation (nvcdi, the DRA driver's) finds the driver by that name
# ("failed to locate libcuda.so: libnvidia-ml.so.<version>: not found" without it)
if [ -n "${GPU_DRIVER_VERSION:-}" ]; then
  mv -f /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.$GPU_DRIVER_VERSION"
  ln -sfn "libnvidia-ml.so.$GPU_DRIVER_VERSION" /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1
fi
# the node's configuration in its copy of the library, for a container given the library alone
# (NVIDIA's DRA driver's CDI spec): as the node starts (nvml_mock/config.c, nvml_bake.py)
"$PY" "$S/nodebin/nvml_bake.py" "\$(readlink -f /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1)" "$S/gpu/mock/nvml-mock.conf" \
  /usr/lib/x86_64-linux-gnu/nvml-mock-cards.tsv "$S/gpu/mock/nvml-mock-mig.state"
mkdir -p /run/nvml-mock
mount --bind "$S/gpu/mock" /run/nvml-mock
ln -sfn ../../../run/nvml-mock/nvml-mock.conf /usr/lib/x86_64-linux-gnu/nvml-mock.conf
# NVIDIA's container runtime where the drop-in's BinaryName points, its configuration, the CDI spec
install -m 0755 "$BIN_DIR/nvidia-container-runtime" /usr/bin/nvidia-container-runtime
install -m 0755 "$BIN_DIR/nvidia-ctk" /usr/bin/nvidia-ctk
mkdir -p /etc/nvidia-container-runtime /etc/cdi
cp "$S/gpu/runtime-config.toml" /etc/nvidia-container-runtime/config.toml
# the CDI spec's folder is bound, not copied: a spec rewritten after a MIG layout change
# (gpu-refresh) is the one NVIDIA's runtime reads at the next container
mount --bind "$S/gpu/cdi" /etc/cdi
EOF
}

holder_up() {
  if alive holder "$S/nodebin/pause"; then return 0; fi
  mkdir -p "$S/etc-containerd" "$S/cni/net.d" "$S/containerd-root" "$S/kubelet" "$S/run-containerd"
  rm -rf "$S/ov" "$S/run-containerd"/* 2>/dev/null || true    # a boot starts from a clean /run
  # ... and without the cgroups of processes gone with the last one (rmdir leaves a live one be)
  [ -n "$(cgroup_pids)" ] || cgroup_remove
  mounts_script > "$S/holder.sh"
  cgroup_create
  # the holder: a private mount namespace inside the node's network namespace, kept by pause
  setsid nsenter --net="/run/netns/$NETNS" unshare --mount --propagation private -- \
    bash "$S/holder.sh" > "$S/holder.log" 2>&1 < /dev/null 8>&- 9>&- &
  echo $! > "$S/holder.pid"
  wait_for 20 "the node's mount namespace (pause running in it)" holder_ready
  cgroup_join "$(cat "$S/holder.pid")"
  say "node namespaces up (mount + network), holder pid $(cat "$S/holder.pid")"
}

holder_ready() {
  local p; p=$(cat "$S/holder.pid")
  [ -d "/proc/$p" ] || die "the node's namespace holder exited: $(tail -3 "$S/holder.log")"
  tr '\0' ' ' < "/proc/$p/cmdline" | grep -F "$S/nodebin/pause" > /dev/null
}

wait_for() { # seconds what fn... : poll fn every 0.2 s until it succeeds, else fail naming what
  local limit=$1 what=$2 end; shift 2
  end=$(( $(date +%s) + limit ))
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || die "waited ${limit}s for $what"
    sleep 0.2   # poll interval of this wait, bounded by $limit
  done
}

forward_up() {
  if alive forward "netns_forward.py"; then return 0; fi
  setsid "$PY" "$S/nodebin/netns_forward.py" "/run/netns/$NETNS" "$API_PORT" > "$S/forward.log" 2>&1 < /dev/null 8>&- 9>&- &
  echo $! > "$S/forward.pid"
  say "API server port $API_PORT carried into the node's loopback"
}

died() { # NAME LOG: which process ended, how (its supervisor's record), the last lines of its log
  local name=$1 log=$2 pid rc how
  pid=$(cat "$S/$name.pid" 2>/dev/null || echo "?")
  # the supervisor writes the status as the process ends: a bounded wait for it (5 s)
  for _ in $(seq 1 25); do [ -s "$S/$name.exit" ] && break; sleep 0.2; done   # poll interval, 25 rounds
  rc=$(cat "$S/$name.exit" 2>/dev/null || true)
  if [ -z "$rc" ]; then
    how="is gone and its supervisor recorded no exit status (the supervisor was killed too: something outside the lab killed the node's processes)"
  elif [ "$rc" -gt 128 ]; then
    how="was killed by signal $((rc - 128)) (SIG$(kill -l $((rc - 128)) 2>/dev/null || echo '?'), exit status $rc)"
  else
    how="exited with status $rc"
  fi
  local last
  last=$(grep -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -n 5 | cut -c1-300 | sed 's/^/    /')
  printf '%s (pid %s) %s; the last lines of its log %s:\n%s' "$name" "$pid" "$how" "$log" "${last:-    (the log is empty)}"
}

cri_ready() {
  alive containerd "containerd" || die "$(died containerd "$S/containerd.log")"
  in_node ctr --address /run/containerd/containerd.sock version >/dev/null 2>&1
}

supervised() { # NAME CMD...: start CMD in the node's namespaces and cgroup, under supervise.sh
  local name=$1; shift
  rm -f "$S/$name.pid" "$S/$name.exit"
  nsenter --target "$(cat "$S/holder.pid")" --mount --net -- env -i HOME=/root PATH="$NODE_PATH" \
    setsid bash "$S/nodebin/supervise.sh" "$name" "$S" "$S/cgroup-procs.list" -- "$@" \
    > "$S/$name.log" 2>&1 < /dev/null 8>&- 9>&- &
  wait_for 20 "$name to start (its supervisor writes $S/$name.pid)" test -s "$S/$name.pid"
  cgroup_join "$(cat "$S/$name.pid")"
}

containerd_start() { # incident|reboot
  local mode=$1
  if [ "$mode" = incident ]; then view_sync main > /dev/null; else view_sync all > /dev/null; fi
  [ -f "$S/containerd.log" ] && mv -f "$S/containerd.log" "$S/containerd.log.1"
  # no main config yet (a fresh lab folder): containerd starts on its built-in defaults
  local config_arg=()
  [ -f "$S/etc-containerd/config.toml" ] && config_arg=(--config /etc/containerd/config.toml)
  supervised containerd "$CONTAINERD_BIN_DIR/containerd" "${config_arg[@]}"
  wait_for "$WAIT_TIMEOUT" "containerd to answer on its socket" cri_ready
  "$PY" "$S/nodebin/node_state.py" boot-record "$S" "$mode" "$LAB_ROOT/etc/containerd/config.toml" \
    "$CONTAINERD_VERSION" "$VIEW_FLAGS"
  if [ "$mode" = incident ]; then
    say "containerd $CONTAINERD_VERSION started from the main config alone (as on the incident day)"
    images_import
    local arrived; arrived=$(view_sync all | tr '\n' ' ')
    [ -z "$arrived" ] || say "then the drop-in arrived: ${arrived% } (containerd not restarted)"
  elif [ "$mode" = restart ]; then
    say "containerd $CONTAINERD_VERSION restarted from every file on disk"
    images_import
  else
    say "containerd $CONTAINERD_VERSION started from every file on disk (the reboot)"
    images_import
  fi
}

images_import() {
  local want have
  want=$(sha256sum "$IMAGES_TAR" | cut -d' ' -f1)
  have=$(cat "$S/containerd-root/.lab-images" 2>/dev/null || true)
  [ "$want" = "$have" ] && return 0
  in_node ctr --address /run/containerd/containerd.sock -n k8s.io images import "$IMAGES_TAR" > "$S/images.log" 2>&1 ||
    die "importing the local images failed: $(tail -2 "$S/images.log")"
  echo "$want" > "$S/containerd-root/.lab-images"
  say "local images imported (pause, busybox and the stand-ins the lab's manifests name)"
}

kubelet_start() {
  [ -f "$S/kubelet.log" ] && mv -f "$S/kubelet.log" "$S/kubelet.log.1"
  KUBELET_STARTED=1
  supervised kubelet "$KUBELET" --config "$S/kubelet-config.yaml" --kubeconfig "$S/pki/kubelet.kubeconfig" \
    --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --node-labels "$NODE_LABELS" --v 1
  say "kubelet started as $NODE_NAME ($NODE_IP)"
}

status_json() { # ACTIONS (\x1f-separated): what runs, as JSON (nodebin/node_state.py)
  local cri_info="$S/crictl-info.json" cri_err="$S/crictl.err"
  rm -f "$cri_info" "$cri_err"
  if alive containerd "containerd" && alive holder; then
    in_node crictl info > "$cri_info" 2> "$cri_err" || rm -f "$cri_info"
  fi
  "$PY" "$S/nodebin/node_state.py" status "$S" "$1" "$NODE_IP" "$NETNS" \
    "$(alive holder && echo 1)" "$(alive containerd "containerd" && echo 1)" \
    "$(alive kubelet "$KUBELET" && echo 1)" "$(alive forward netns_forward.py && echo 1)" "$cri_info" "$cri_err"
}

packages() { # Debian's packages, unpacked (never installed) under PACKAGES_DIR/<name>
  local p deb lock
  mkdir -p "$PACKAGES_DIR/debs"
  # two labs started at once (make test's lanes) take turns: one unpacks, the other finds it done
  exec {lock}>"$PACKAGES_DIR/.lock"
  flock "$lock"
  for p in containerd runc containernetworking-plugins busybox-static; do
    [ -e "$PACKAGES_DIR/$p/.unpacked" ] && continue
    command -v apt-get >/dev/null || die "apt-get is needed to fetch Debian's $p package"
    ( cd "$PACKAGES_DIR/debs" && { apt-get download "$p" >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 && apt-get download "$p" >/dev/null 2>&1; }; } ) ||
      die "apt-get download $p failed (Debian's package mirror not reachable?)"
    deb=$(find "$PACKAGES_DIR/debs" -maxdepth 1 -name "${p}_*.deb" -printf '%T@ %p\n' | sort -rn | head -1 | cut -d' ' -f2-)
    rm -rf "${PACKAGES_DIR:?}/$p" && dpkg-deb -x "$deb" "$PACKAGES_DIR/$p"
    basename "$deb" > "$PACKAGES_DIR/$p/.unpacked"
    say "unpacked Debian's $(basename "$deb")"
  done
  exec {lock}>&-
}

containerd_build() { # 2.x: containerd, its runc shim and ctr from the pinned module (toolchain/build.sh)
  # node.env: CONTAINERD_DEBIAN and the module folder of the chosen version (toolchain/versions.env)
  [ "$CONTAINERD_VERSION" != "$CONTAINERD_DEBIAN" ] || return 0
  [ -n "${CONTAINERD_MODULE_DIR:-}" ] || die "containerd $CONTAINERD_VERSION is not one the lab has ($CONTAINERD_KNOWN; toolchain/versions.env)"
  local c
  for c in containerd containerd-shim-runc-v2 ctr; do
    [ -x "$CONTAINERD_BIN_DIR/$c" ] && continue
    command -v go >/dev/null || die "go is needed to build containerd $CONTAINERD_VERSION"
    echo "real-node: building $c $CONTAINERD_VERSION (a few minutes the first time)" >&2
    bash "$TOOLCHAIN_DIR/build.sh" "$c:$CONTAINERD_VERSION" "$CONTAINERD_BIN_DIR" > "$S/build.log" 2>&1 ||
      die "building $c $CONTAINERD_VERSION failed: $(tail -3 "$S/build.log")"
    say "built $c $CONTAINERD_VERSION"
  done
}

prepare() { # binaries on the node's PATH, wrappers for the host, credentials, images
  packages
  containerd_build
  mkdir -p "$S/nodebin" "$S/bin" "$S/pki" "$S/cni/bin"
  [ -x "$KUBELET" ] || die "no kubelet at $KUBELET (the control_plane_binaries role builds it)"
  [ -x "$BIN_DIR/crictl" ] || die "no crictl at $BIN_DIR/crictl (the control_plane_binaries role builds it)"
  local link target
  for link in containerd:$CONTAINERD_BIN_DIR/containerd ctr:$CONTAINERD_BIN_DIR/ctr \
      containerd-shim-runc-v2:$CONTAINERD_BIN_DIR/containerd-shim-runc-v2 \
      runc:$PACKAGES_DIR/runc/usr/sbin/runc crictl:$BIN_DIR/crictl kubelet:$KUBELET; do
    target=${link#*:}
    [ "$(readlink "$S/nodebin/${link%%:*}" 2>/dev/null)" = "$target" ] || ln -sfn "$target" "$S/nodebin/${link%%:*}"
  done
  if [ ! -e "$S/cni/bin/bridge" ]; then cp -a "$PACKAGES_DIR/containernetworking-plugins/usr/lib/cni/." "$S/cni/bin/"; fi
  if [ ! -x "$S/nodebin/pause" ] || [ "$S/nodebin/pause.c" -nt "$S/nodebin/pause" ]; then
    command -v gcc >/dev/null || die "gcc is needed to build the sandbox's pause (Debian: apt-get install gcc libc6-dev)"
    gcc -static -Os -o "$S/nodebin/pause.tmp" "$S/nodebin/pause.c" 2> "$S/build.log" ||
      die "building pause failed: $(tail -2 "$S/build.log")"
    mv -f "$S/nodebin/pause.tmp" "$S/nodebin/pause"
    say "built the sandbox's pause"
  fi
  local wrappers="crictl ctr containerd node-exec"
  if [ "${GPU_STACK:-none}" = nvidia ]; then wrappers+=" nvidia-smi"; else rm -f "$S/bin/nvidia-smi"; fi
  for c in $wrappers; do   # host-side wrappers: run on the node
    local body="#!/bin/sh
# Runs ${c/node-exec/a command} on the real node $NODE_NAME (its namespaces, its PATH).
exec \"$S/nodebin/real-node.sh\" exec \"$S\" ${c/node-exec/} \"\$@\""
    [ "$(cat "$S/bin/$c" 2>/dev/null)" = "$body" ] || { printf '%s\n' "$body" > "$S/bin/$c"; chmod 0755 "$S/bin/$c"; }
  done
  # the kubelet's node credentials: system:node:NAME, signed by the cluster's CA
  { [ -r "$PKI_DIR/ca.crt" ] && [ -r "$PKI_DIR/ca.key" ]; } || die "no cluster CA in $PKI_DIR (ca.crt, ca.key)"
  if ! cmp -s "$PKI_DIR/ca.crt" "$S/pki/ca.crt" || [ ! -s "$S/pki/kubelet.crt" ]; then
    cp "$PKI_DIR/ca.crt" "$S/pki/ca.crt"
    ( umask 077
      openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$S/pki/kubelet.key" \
        -subj "/O=system:nodes/CN=system:node:$NODE_NAME" -out "$S/pki/kubelet.csr" 2>/dev/null
      printf 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' > "$S/pki/ext"
      openssl x509 -req -in "$S/pki/kubelet.csr" -CA "$PKI_DIR/ca.crt" -CAkey "$PKI_DIR/ca.key" \
        -CAcreateserial -CAserial "$S/pki/ca.srl" -days 3650 -extfile "$S/pki/ext" -out "$S/pki/kubelet.crt" 2>/dev/null ) ||
      die "signing the kubelet's certificate with $PKI_DIR/ca.key failed"
    say "node credentials system:node:$NODE_NAME signed by the cluster's CA"
  fi
  local kw; kw="$(dirname "$KUBECONFIG_ADMIN")/kwok.yaml"
  if [ -r "$kw" ] && ! grep -q -- "--manage-nodes-with-annotation-selector=" "$kw"; then
    die "the cluster of $KUBECONFIG_ADMIN was created without the real node's settings (its kwok-controller manages every node, the API server cannot reach a kubelet): recreate it with ansible-playbook playbooks/teardown.yml, then lab.yml"
  fi
  local server; server=$(awk '$1 == "server:" { print $2; exit }' "$KUBECONFIG_ADMIN")
  API_PORT=${server##*:}
  [ -n "$API_PORT" ] || die "no API server address in $KUBECONFIG_ADMIN"
  local kc="apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: \"https://127.0.0.1:$API_PORT\", certificate-authority: \"$S/pki/ca.crt\"}
users:
- name: $NODE_NAME
  user: {client-certificate: \"$S/pki/kubelet.crt\", client-key: \"$S/pki/kubelet.key\"}
contexts:
- name: node
  context: {cluster: lab, user: $NODE_NAME}
current-context: node"
  [ "$(cat "$S/pki/kubelet.kubeconfig" 2>/dev/null)" = "$kc" ] || { printf '%s\n' "$kc" > "$S/pki/kubelet.kubeconfig"; chmod 0600 "$S/pki/kubelet.kubeconfig"; }
  if [ "${GPU_STACK:-none}" = nvidia ]; then gpu_prepare; else rm -f "$S/gpu/nvidia.json"; fi
  # the images: one tarball per content (names, configs and the files' content), built once in the
  # shared cache and used by every lab of this user
  local want cache
  want=$("$PY" "$S/nodebin/oci_image.py" --key "$S/images.json") || die "reading the files of the local images failed"
  cache="$(dirname "$BIN_DIR")/images/$want.tar"
  if [ ! -s "$cache" ]; then
    mkdir -p "${cache%/*}"
    "$PY" "$S/nodebin/oci_image.py" "$S/images.json" "$cache" || die "building the local images failed"
  fi
  [ "$(readlink "$IMAGES_TAR" 2>/dev/null)" = "$cache" ] || ln -sfn "$cache" "$IMAGES_TAR"
}

gpu_prepare() { # the mock NVML library and its reader as a driver root; the CDI spec naming its GPUs
  local lib="$GPU_DRIVER_ROOT/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1" src stale=""
  [ -e "$lib" ] && [ -x "$GPU_DRIVER_ROOT/usr/bin/nvidia-smi" ] || stale=1
  for src in "$GPU_MOCK_SRC"/*; do [ ! "$src" -nt "$lib" ] || stale=1; done
  if [ -n "$stale" ]; then
    command -v gcc >/dev/null || die "gcc is needed to build the mock NVML library (Debian: apt-get install gcc libc6-dev)"
    TOOLCHAIN_DIR=$TOOLCHAIN_DIR bash "$GPU_MOCK_SRC/build.sh" --driver-root "$GPU_DRIVER_ROOT" > "$S/gpu/build.log" 2>&1 ||
      die "building the mock NVML library failed: $(tail -3 "$S/gpu/build.log")"
    say "built the mock NVML library and its nvidia-smi reader (the GPU stack's one fake) in $GPU_DRIVER_ROOT"
  fi
  # the configuration beside the library (empty: the mock's defaults); the node's is bound over it
  [ -e "${lib%/*}/nvml-mock.conf" ] || : > "${lib%/*}/nvml-mock.conf"
  # the CDI spec, from the reader over the node's configuration; its paths name the node's own
  # /usr (where the holder puts the driver's files), not the build folder
  local spec
  # the mock's holders (nvml_mock/nvml-mock-hold.sh): the runtime runs it for each MIG device a
  # container gets; in the node's /run/nvml-mock (this folder, bound there)
  cmp -s "$GPU_MOCK_SRC/nvml-mock-hold.sh" "$S/gpu/mock/nvml-mock-hold" ||
    install -m 0755 "$GPU_MOCK_SRC/nvml-mock-hold.sh" "$S/gpu/mock/nvml-mock-hold"
  spec=$(NVML_MOCK_CONFIG="$S/gpu/mock/nvml-mock.conf" "$PY" "$S/nodebin/gpu_cdi_spec.py" --driver-root "$GPU_DRIVER_ROOT" \
           --uvm-major "$GPU_UVM_MAJOR" --mig-state /run/nvml-mock/nvml-mock-mig.state \
           --mig-state-here "$S/gpu/mock/nvml-mock-mig.state" --hold-hook /run/nvml-mock/nvml-mock-hold \
           2> "$S/gpu/cdi.err") || die "writing the CDI spec failed: $(tail -2 "$S/gpu/cdi.err")"
  spec=${spec//\"$GPU_DRIVER_ROOT\//\"\/}
  # the files NVIDIA's tools read beside NVML - PCI sysfs, /proc/driver/nvidia-caps/mig-minors,
  # /proc/modules (nvml_mock/gpu_view.sh --files) - for the GPUs the mock reports now, in the
  # node's /run/nvml-mock/view: the plugin's and GFD's Pods mount them, mig-parted's runs put them
  # in place (playbooks/mig.yml). A mock that reports no GPU now (a drill's fault) keeps the last.
  NVML_MOCK_CONFIG="$S/gpu/mock/nvml-mock.conf" LD_LIBRARY_PATH="${lib%/*}" PATH="$GPU_DRIVER_ROOT/usr/bin:$PATH" \
    bash "$GPU_MOCK_SRC/gpu_view.sh" --files "$S/gpu/mock/view" > "$S/gpu/view.log" 2>&1 || true
  if [ "$(cat "$S/gpu/nvidia.json" 2>/dev/null)" != "$spec" ]; then
    printf '%s\n' "$spec" > "$S/gpu/nvidia.json.tmp" && mv -f "$S/gpu/nvidia.json.tmp" "$S/gpu/nvidia.json"
  fi
  mkdir -p "$S/gpu/cdi"    # the node's /etc/cdi (bound): what NVIDIA's runtime reads
  cmp -s "$S/gpu/nvidia.json" "$S/gpu/cdi/nvidia.json" ||
    { cp "$S/gpu/nvidia.json" "$S/gpu/cdi/.nvidia.json.tmp" && mv -f "$S/gpu/cdi/.nvidia.json.tmp" "$S/gpu/cdi/nvidia.json"; }
}

gpu_bake() { # the running node's copy of the library baked anew: the configuration and MIG state
  # now, for the containers NVIDIA's DRA driver gives a device from here on (nvml_bake.py; the
  # holder bakes at boot) - after the holder is up with this script's view, never before
  [ "${GPU_STACK:-none}" = nvidia ] && alive holder "$S/nodebin/pause" || return 0
  # shellcheck disable=SC2016  # expanded by the node's bash (the link is the node's)
  in_node bash -c '"$0" "$1" "$(readlink -f /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1)" "$2" \
    /usr/lib/x86_64-linux-gnu/nvml-mock-cards.tsv "$3"' "$PY" "$S/nodebin/nvml_bake.py" \
    "$S/gpu/mock/nvml-mock.conf" "$S/gpu/mock/nvml-mock-mig.state" 2> "$S/gpu/bake.err" ||
    die "baking the node's configuration into its library failed: $(tail -2 "$S/gpu/bake.err")"
}

kwok_stand_in_gone() { # a kwok Node of the same name (an older lab) would fight the kubelet
  local ann
  ann=$(kubectl_admin get node "$NODE_NAME" -o 'jsonpath={.metadata.annotations.kwok\.x-k8s\.io/node}' 2>/dev/null) || return 0
  if [ "$ann" = fake ]; then
    kubectl_admin delete node "$NODE_NAME" --wait=true >/dev/null
    say "removed the kwok stand-in Node $NODE_NAME (the real kubelet registers it)"
  fi
}

kubectl_admin() { "$BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

node_ready() { # the Node's Ready condition: True | False | Unknown | (empty: not registered)
  kubectl_admin get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null
}

wait_ready() {
  wait_for "$WAIT_TIMEOUT" "node $NODE_NAME to turn Ready (kubelet log: $S/kubelet.log)" ready_or_kubelet_dead
  # a kubelet that (re)started holds the device plugin's devices from its checkpoint as unhealthy
  # until the plugin registers again: a GPU Pod admitted before that is refused
  # (UnexpectedAdmissionError). Where the plugin is deployed, wait for its registration.
  if [ "${GPU_STACK:-none}" = nvidia ] && [ -n "$KUBELET_STARTED" ] && plugin_deployed; then
    wait_for "$WAIT_TIMEOUT" "NVIDIA's device plugin to register with the kubelet again (kubelet log: $S/kubelet.log)" plugin_registered
    say "NVIDIA's device plugin registered with the kubelet"
  fi
}
plugin_deployed() { # the node carries the GPU Operator's label that deploys the device plugin
  [ "$(kubectl_admin get node "$NODE_NAME" -o 'jsonpath={.metadata.labels.nvidia\.com/gpu\.deploy\.device-plugin}' 2>/dev/null)" = true ]
}
plugin_registered() { grep -q "Got registration request from device plugin" "$S/kubelet.log"; }
ready_or_kubelet_dead() {
  alive kubelet "$KUBELET" || die "$(died kubelet "$S/kubelet.log")"
  [ "$(node_ready)" = True ]
}

not_ready() { local r; r=$(node_ready); [ -n "$r" ] && [ "$r" != True ]; }

boot() { # incident|reboot (holder and network already up)
  containerd_start "$1"
  kubelet_start
}

legacy_down() { # this lab's node as an older lab ran it (one state folder per cluster name)
  local legacy=${LEGACY_STATE_DIR:-}
  [ -n "$legacy" ] && [ "$legacy" != "$S" ] && [ -r "$legacy/node.env" ] || return 0
  # only the same lab's node (the same cluster kubeconfig): another home's lab is not ours to stop
  grep -qxF "KUBECONFIG_ADMIN=$KUBECONFIG_ADMIN" "$legacy/node.env" || return 0
  [ -x "$legacy/nodebin/real-node.sh" ] || return 0
  "$legacy/nodebin/real-node.sh" down "$legacy" > /dev/null 2>&1 ||
    die "stopping this lab's node where an older lab kept it ($legacy) failed: run $legacy/nodebin/real-node.sh down $legacy"
  say "stopped this lab's node from the older layout ($legacy); it now lives in $S"
}

case "$cmd" in
  converge)
    legacy_down
    prepare
    kwok_stand_in_gone
    net_up
    fresh=""
    if alive holder "$S/nodebin/pause" && [ "$(mounts_script)" != "$(cat "$S/holder.sh" 2>/dev/null)" ]; then
      # the node's view changed (the GPU half switched on or off, a newer lab): as a node whose
      # mounts change, it goes down and comes back with the new view
      kill_all
      cgroup_remove
      say "the node's view changed (lab_gpu_stack=$GPU_STACK): its processes stopped, its namespaces set up anew"
    fi
    alive holder "$S/nodebin/pause" || fresh=1
    holder_up
    gpu_bake
    forward_up
    main_sha=""; [ -f "$LAB_ROOT/etc/containerd/config.toml" ] && main_sha=$(sha256sum "$LAB_ROOT/etc/containerd/config.toml" | cut -d' ' -f1)
    boot_mode=$("$PY" "$S/nodebin/node_state.py" boot-key "$S")
    if [ -n "$fresh" ] || ! alive containerd "containerd"; then
      [ -n "$fresh" ] || say "containerd was not running: $(died containerd "$S/containerd.log")"
      if alive kubelet "$KUBELET"; then kill -9 "$(cat "$S/kubelet.pid")" 2>/dev/null || true; fi
      boot incident
    elif [ "$boot_mode" != "incident $main_sha $VIEW_FLAGS $CONTAINERD_VERSION" ]; then
      case "$boot_mode" in
        reboot*) say "the node was rebooted; back to the incident's end state" ;;
        restart*) say "containerd was restarted from every file; back to the incident's end state" ;;
        "incident $main_sha "*) say "containerd was started with other settings (containerd version or the node's view)" ;;
        *) say "the main config changed since containerd started" ;;
      esac
      kill -9 "$(cat "$S/containerd.pid")" 2>/dev/null || true   # gone already is what is wanted
      wait_for 20 "the old containerd to exit" bash -c "! kill -0 $(cat "$S/containerd.pid") 2>/dev/null"
      if alive kubelet "$KUBELET"; then kill -9 "$(cat "$S/kubelet.pid")" 2>/dev/null || true; fi
      boot incident
    else
      images_import
      arrived=$(view_sync all | tr '\n' ' ')
      [ -z "$arrived" ] || say "the drop-in arrived: ${arrived% } (containerd not restarted)"
      alive kubelet "$KUBELET" || { say "kubelet was not running: $(died kubelet "$S/kubelet.log")"; kubelet_start; }
    fi
    wait_ready
    status_json "$(IFS=$'\x1f'; echo "${actions[*]:-}")"
    ;;
  reboot)
    [ -f "$S/holder.pid" ] || die "no real node here ($S): run lab.yml first"
    prepare
    kill_all
    # a boot starts with no cgroup of the last one: left behind, each container's cgroup costs the
    # kubelet's cAdvisor about 3 s at start ("Failed to create existing container"), a minute with
    # step 7's Pods
    cgroup_remove
    say "the node went down: every process stopped, its mounts and cgroups gone with it"
    net_up
    holder_up
    forward_up
    boot reboot
    if in_node crictl info > /dev/null 2>&1; then
      wait_ready
    else
      say "containerd's CRI does not answer: $(grep -E 'failed to load plugin io.containerd.grpc.v1.cri|level=(error|fatal)' "$S/containerd.log" | tail -1 | sed -E 's/.*error="?//; s/"$//')"
      wait_for "$WAIT_TIMEOUT" "the control plane to see $NODE_NAME NotReady" not_ready
      say "$NODE_NAME is NotReady ($(node_ready))"
    fi
    status_json "$(IFS=$'\x1f'; echo "${actions[*]:-}")"
    ;;
  restart-containerd)   # containerd alone restarts and loads every file (what a handler does);
    # `restart-containerd STATE incident`: from the main config alone, the drop-ins arriving after
    # (as the lab's node starts on the incident day) - how gpu_toolkit gives back a node whose
    # containerd ran that way before NVIDIA's installer
    start_mode=${3:-restart}
    case "$start_mode" in restart|incident) ;; *)
      die "restart-containerd: the start is 'restart' (every file) or 'incident' (the main config alone, the drop-ins after), not '$start_mode'" ;;
    esac
    alive holder "$S/nodebin/pause" || die "the real node is not running (run lab.yml)"
    # a restart policy (supervise containerd always) must not start a second containerd beside
    # the one started here: it is set aside while containerd stops, and back for the new one
    [ -f "$S/containerd.restart" ] && mv -f "$S/containerd.restart" "$S/containerd.restart.held"
    if alive containerd "containerd"; then
      kill -TERM "$(cat "$S/containerd.pid")" 2>/dev/null || true   # gone already: nothing to stop
      wait_for 30 "containerd to stop" bash -c "! kill -0 $(cat "$S/containerd.pid") 2>/dev/null"
    fi
    containerd_start "$start_mode"
    [ -f "$S/containerd.restart.held" ] && mv -f "$S/containerd.restart.held" "$S/containerd.restart"
    status_json "$(IFS=$'\x1f'; echo "${actions[*]:-}")"
    ;;
  status)
    status_json ""
    ;;
  supervise)   # supervise containerd always [SECONDS] | no: the supervisor's restart policy
    [ "${3:-}" = containerd ] || die "usage: real-node.sh supervise STATE containerd always [SECONDS] | no"
    case "${4:-}" in
      always)
        seconds=${5:-5}
        [[ "$seconds" =~ ^[0-9]+$ ]] || die "supervise: RestartSec must be whole seconds, not '$seconds'"
        # the running supervisor must know the policy: one started before nodebin/supervise.sh learnt
        # it (a node that runs since an older lab.yml) would let containerd stay down
        if alive containerd "containerd"; then
          sup=$(ps -o ppid= -p "$(cat "$S/containerd.pid")" | tr -d ' ')
          started=$(( $(date +%s) - $(ps -o etimes= -p "$sup" | tr -d ' ') ))
          [ "$started" -ge "$(stat -c %Y "$S/nodebin/supervise.sh")" ] ||
            die "containerd's supervisor (pid $sup) started before nodebin/supervise.sh knew restart policies: it would not start containerd again - restart containerd first (real-node.sh restart-containerd $S) or reboot the node (playbooks/reboot.yml)"
        fi
        # containerd.service (upstream): Restart=always, RestartSec=5; before each restart the node's
        # /etc/containerd view is synced from its disk (the lab folder), as a real node has one /etc
        printf 'always %s\n%q %q %q %q all %q %q %q\n' "$seconds" "$PY" "$S/nodebin/node_view.py" \
          "$LAB_ROOT/etc/containerd" "$S/etc-containerd" "$LAB_ROOT" "$VIEW_REWRITE_SYSTEMD" "$VIEW_RESTRICT_OOM" \
          > "$S/containerd.restart.tmp"
        if cmp -s "$S/containerd.restart.tmp" "$S/containerd.restart"; then rm -f "$S/containerd.restart.tmp"
        else mv -f "$S/containerd.restart.tmp" "$S/containerd.restart"; actions+=("containerd: Restart=always, RestartSec=${seconds}"); fi
        ;;
      no)
        if [ -f "$S/containerd.restart" ]; then rm -f "$S/containerd.restart"; actions+=("containerd: no restart policy"); fi
        ;;
      *) die "supervise: always [SECONDS] or no, not '${4:-}'" ;;
    esac
    status_json "$(IFS=$'\x1f'; echo "${actions[*]:-}")"
    ;;
  gpu-refresh)
    [ "${GPU_STACK:-none}" = nvidia ] || die "the node has no GPU half (lab_gpu_stack=${GPU_STACK:-none})"
    gpu_prepare
    gpu_bake
    echo "$S/gpu/nvidia.json: $(grep -c '"name": "MIG-' "$S/gpu/nvidia.json" || true) MIG devices"
    ;;
  exec)
    shift 2
    alive holder "$S/nodebin/pause" || die "the real node is not running (run lab.yml)"
    view_sync all > /dev/null
    holder=$(cat "$S/holder.pid")
    # from here on the command's own: its output, its stderr straight to the caller, its status
    trap - ERR EXIT
    run_err_close
    rm -f "$RUN_ERR"
    exec nsenter --target "$holder" --mount --net -- env -i HOME=/root PATH="$NODE_PATH" "$@" 8>&- 9>&-
    ;;
  down)
    owner=$(cat "$OWNERS/$NETNS.owner" 2>/dev/null || true)
    if [ -n "$owner" ] && [ "$owner" != "$S" ] && [ -d "/proc/$(cat "$owner/holder.pid" 2>/dev/null || echo 0)" ]; then
      die "not stopping: the names $NETNS / cgroup $CG belong to another lab's running node ($owner), not to this lab ($S)"
    fi
    kill_all
    cgroup_remove
    if ip link show "$VETH_HOST" >/dev/null 2>&1; then ip link del "$VETH_HOST"; say "veth removed"; fi
    if ip netns list | grep -w "$NETNS" > /dev/null; then ip netns del "$NETNS"; say "network namespace removed"; fi
    [ "$(cat "$OWNERS/$NETNS.owner" 2>/dev/null)" != "$S" ] || rm -f "$OWNERS/$NETNS.owner"
    legacy_down
    # what the node held goes with it (images, containers, credentials); its logs stay for a look
    # afterwards. Nothing of it is mounted any more: its mounts lived in its mount namespace.
    # the last word before the node's own helpers go with the rest
    result=$(status_json "$(IFS=$'\x1f'; echo "${actions[*]:-}")")
    find "$S" -mindepth 1 -maxdepth 1 ! -name '*.log' ! -name '*.log.1' -exec rm -rf {} +
    [ -n "$(ls -A "$S")" ] || rmdir "$S"
    printf '%s\n' "$result"
    ;;
  *) die "unknown command $cmd" ;;
esac
