#!/usr/bin/env bash
# components.sh live CLUSTER_DIR          pids of components that really run
# components.sh clear-stale CLUSTER_DIR   remove pid files of dead components, print their names
# components.sh wait-gone TIMEOUT PID...  wait until each pid has exited (or is a zombie)
# components.sh check CLUSTER_DIR KUBECTL KUBECONFIG
#     one JSON line: {"exists": .., "dead": [..], "ready": .., "kubeconfig_fixed": ..}
#     clears the pid files of dead components (as clear-stale), asks the API server for
#     /readyz when nothing is dead, and makes the kubeconfig mode 0600 when it is not.
#     The whole health check of a rerun in one process, no Python on the way.
# components.sh wait-ready TIMEOUT CLUSTER_DIR KUBECTL KUBECONFIG
#     after kwokctl created or started the cluster: makes the kubeconfig mode 0600, then waits
#     until the API server answers /readyz and kwok-controller its /healthz with every component
#     running, or a component has
#     exited (its pid file is kept for the next run's check), or TIMEOUT seconds passed; prints
#     one JSON line {"ready": .., "dead": [..], "waited": SECONDS}.
#
# components.sh up TIMEOUT CLUSTER_DIR KUBECTL KUBECONFIG KWOKCTL ARG...
#     runs KWOKCTL ARG... (create cluster, or start cluster) and, when it succeeded, waits as
#     wait-ready does, printing its JSON line (kwokctl's output is dropped); when kwokctl
#     fails, its own output is on stderr and its exit code is the script's. One script run for the whole start of a cluster.
#     Labs on one machine take turns here: kwokctl picks each component's port by counting down
#     from 32767 and probing with a listen it closes again (sigs.k8s.io/kwok v0.8.0
#     pkg/utils/net/unused_port.go), so two creates in the same moment pick the same ports. The
#     turn is a flock on COMPONENTS_LOCK (default /tmp/gpu-incident-lab-kwokctl.lock, one per
#     machine whatever the HOME), held until the API server answers - its ports are bound then.
#
# kwokctl decides that a component runs when signal 0 reaches the pid in
# pids/<component>.pid. A killed component that nobody has reaped yet (a
# zombie: kwokctl detaches components, so their parent is init) still answers
# signal 0, and `kwokctl start cluster` would skip it and never bring it back.
# An API server that was sent SIGTERM also keeps running for a while as it
# shuts down. This helper lets the role see through both.
set -euo pipefail

alive() { # pid -> 0 when it runs and is not a zombie
  local state
  [ -r "/proc/$1/stat" ] || return 1
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

kwok_serves() { # DIR -> 0 when kwok-controller answers its /healthz (or has no server to ask)
  # The API server can be ready before kwok-controller has read its configuration: one that then
  # refuses it exits a moment later (seen under load). Ready means kwok-controller serves too -
  # its --server-address (kwokctl gives one) answers /healthz only once it runs.
  local pid addr
  pid=$( { tr -dc '0-9' < "$1/pids/kwok-controller.pid"; } 2>/dev/null) || return 0
  [ -n "$pid" ] || return 0
  addr=$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | sed -n 's/^--server-address=//p' | head -1)
  [ -n "$addr" ] || return 0
  python3 -c 'import ssl, sys, urllib.request
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
sys.exit(0 if urllib.request.urlopen("https://%s/healthz" % sys.argv[1], context=ctx, timeout=3).read().strip() == b"ok" else 1)' "$addr" 2>/dev/null
}

cmd=${1:?usage: components.sh live|clear-stale DIR | wait-gone TIMEOUT PID... | check DIR KUBECTL KUBECONFIG}
shift
scan() { # live|clear-stale DIR
  local file pid
  shopt -s nullglob
  for file in "$2"/pids/*.pid; do
    pid=$(tr -dc '0-9' < "$file")
    if [ -n "$pid" ] && alive "$pid"; then
      if [ "$1" = live ]; then echo "$pid"; fi
    elif [ "$1" = clear-stale ]; then
      [ -n "${COMPONENTS_READ_ONLY:-}" ] || rm -f "$file"   # check mode: report, change nothing
      basename "$file" .pid
    fi
  done
}

case "$cmd" in
  live|clear-stale)
    scan "$cmd" "${1:?cluster folder}"
    ;;
  wait-gone)
    timeout=${1:?timeout in seconds}
    shift
    deadline=$((SECONDS + timeout))
    while :; do
      left=()
      for pid in "$@"; do alive "$pid" && left+=("$pid"); done
      [ ${#left[@]} -eq 0 ] && exit 0
      if [ $SECONDS -ge $deadline ]; then
        echo "still running after ${timeout}s: pid(s) ${left[*]}" >&2
        exit 1
      fi
      sleep 0.5   # poll interval of this bounded wait
    done
    ;;
  check)
    dir=${1:?cluster folder}
    kubectl=${2:?kubectl}
    kubeconfig=${3:?kubeconfig}
    exists=false dead="" ready=false fixed=false
    if [ -f "$dir/kwok.yaml" ]; then
      exists=true
      for name in $(scan clear-stale "$dir"); do dead+="${dead:+,}\"$name\""; done
      if [ -z "$dead" ] && "$kubectl" --kubeconfig "$kubeconfig" --request-timeout=5s \
          get --raw /readyz >/dev/null 2>&1; then
        ready=true
      fi
      if [ -f "$kubeconfig" ] && [ "$(stat -c %a "$kubeconfig")" != 600 ]; then
        [ -n "${COMPONENTS_READ_ONLY:-}" ] || chmod 600 "$kubeconfig"
        fixed=true
      fi
    fi
    printf '{"exists": %s, "dead": [%s], "ready": %s, "kubeconfig_fixed": %s}\n' \
      "$exists" "$dead" "$ready" "$fixed"
    ;;
  up)
    [ $# -ge 5 ] || { echo "usage: components.sh up TIMEOUT CLUSTER_DIR KUBECTL KUBECONFIG KWOKCTL ARG..." >&2; exit 2; }
    timeout=$1 dir=$2 kubectl=$3 kubeconfig=$4
    shift 4
    lock=${COMPONENTS_LOCK:-/tmp/gpu-incident-lab-kwokctl.lock}
    if command -v flock >/dev/null 2>&1; then
      # read-only when another user made the file: flock needs no write access
      { exec 9>>"$lock"; } 2>/dev/null || { exec 9<"$lock"; } 2>/dev/null || exec 9</dev/null
      flock -w "$timeout" 9 || {
        echo "components.sh: waited ${timeout}s for another lab's kwokctl to bind its ports (the lock $lock is held by: $(fuser "$lock" 2>/dev/null || echo unknown)); run again once it is up" >&2
        exit 75
      }
    fi
    # kwokctl's own words only when it fails: over SSH with a terminal, stderr joins stdout, and
    # stdout must stay the one JSON line
    # (not fd 9: the components kwokctl detaches would hold the lock as long as they run)
    out=$("$@" 2>&1 9>&-) || { rc=$?; printf '%s\n' "$out" >&2; exit "$rc"; }
    exec "$0" wait-ready "$timeout" "$dir" "$kubectl" "$kubeconfig"
    ;;
  wait-ready)
    timeout=${1:?timeout in seconds}
    dir=${2:?cluster folder}
    kubectl=${3:?kubectl}
    kubeconfig=${4:?kubeconfig}
    [ ! -f "$kubeconfig" ] || chmod 600 "$kubeconfig"
    start=$SECONDS deadline=$((SECONDS + timeout)) ready=false
    while :; do
      dead=""
      for name in $(COMPONENTS_READ_ONLY=1 scan clear-stale "$dir"); do dead+="${dead:+,}\"$name\""; done
      [ -n "$dead" ] && break
      if "$kubectl" --kubeconfig "$kubeconfig" --request-timeout=5s get --raw /readyz >/dev/null 2>&1 &&
         kwok_serves "$dir"; then
        ready=true
        break
      fi
      [ $SECONDS -ge $deadline ] && break
      sleep 0.5   # poll interval of this bounded wait
    done
    printf '{"ready": %s, "dead": [%s], "waited": %d}\n' "$ready" "$dead" $((SECONDS - start))
    ;;
  *) echo "components.sh: unknown command $cmd" >&2; exit 2 ;;
esac
