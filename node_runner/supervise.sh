#!/usr/bin/env bash
# supervise.sh NAME STATE CGROUP_PROCS_LIST -- CMD [ARG...]
#
# Runs CMD as a child and outlives it long enough to say how it ended: joins the node's cgroups
# first (every file listed in CGROUP_PROCS_LIST, one per line), so CMD and everything it starts
# are the node's; writes CMD's pid to STATE/NAME.pid once it runs and, when CMD ends, its exit
# status to STATE/NAME.exit ("137" = killed by SIGKILL). real-node.sh reads both to name what
# died and how, instead of finding a pid gone with no reason.
set -u
name=$1 state=$2 procs_list=$3
shift 3
[ "${1:-}" = -- ] && shift
if [ -r "$procs_list" ]; then
  while IFS= read -r procs; do
    [ -n "$procs" ] && echo "$BASHPID" > "$procs" 2>/dev/null
  done < "$procs_list"
fi
rm -f "$state/$name.exit"
"$@" &
child=$!
echo "$child" > "$state/$name.pid.tmp" && mv -f "$state/$name.pid.tmp" "$state/$name.pid"
# a TERM for the supervisor is meant for the process it runs
trap 'kill -TERM "$child" 2>/dev/null' TERM
while :; do
  wait "$child"
  rc=$?
  # wait returns early (status > 128) when the trap ran; the child may still be running
  kill -0 "$child" 2>/dev/null || break
done
echo "$rc" > "$state/$name.exit.tmp" && mv -f "$state/$name.exit.tmp" "$state/$name.exit"
