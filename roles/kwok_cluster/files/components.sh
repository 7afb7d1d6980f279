#!/usr/bin/env bash
# components.sh live CLUSTER_DIR          pids of components that really run
# components.sh clear-stale CLUSTER_DIR   remove pid files of dead components, print their names
# components.sh wait-gone TIMEOUT PID...  wait until each pid has exited (or is a zombie)
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

cmd=${1:?usage: components.sh live|clear-stale DIR | wait-gone TIMEOUT PID...}
shift
case "$cmd" in
  live|clear-stale)
    dir=${1:?cluster folder}
    shopt -s nullglob
    for file in "$dir"/pids/*.pid; do
      pid=$(tr -dc '0-9' < "$file")
      if [ -n "$pid" ] && alive "$pid"; then
        if [ "$cmd" = live ]; then echo "$pid"; fi
      elif [ "$cmd" = clear-stale ]; then
        rm -f "$file"
        basename "$file" .pid
      fi
    done
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
  *) echo "components.sh: unknown command $cmd" >&2; exit 2 ;;
esac
