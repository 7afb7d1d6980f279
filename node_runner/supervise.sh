#!/usr/bin/env bash
# supervise.sh NAME STATE CGROUP_PROCS_LIST -- CMD [ARG...]
#
# Runs CMD as a child and outlives it long enough to say how it ended: joins the node's cgroups
# first (every file listed in CGROUP_PROCS_LIST, one per line), so CMD and everything it starts
# are the node's; writes CMD's pid to STATE/NAME.pid once it runs and, when CMD ends, its exit
# status to STATE/NAME.exit ("137" = killed by SIGKILL). real-node.sh reads both to name what
# died and how, instead of finding a pid gone with no reason.
#
# Restart policy (a stand-in for systemd's, real-node.sh `supervise NAME always|no`): when
# STATE/NAME.restart exists and says `always SECONDS` on its first line, a CMD that ends on its own
# is started again after SECONDS - containerd's upstream unit (containerd.service: Restart=always,
# RestartSec=5) - and each restart is said on stderr (NAME.log) and counted in STATE/NAME.restarts.
# Its other lines, if any, are a command run before each restart (an ExecStartPre: the lab node's
# /etc/containerd view synced from its disk). A TERM for the supervisor (a stop) or SIGKILL ends
# it without a restart. CMD starts with every signal's default handling (as systemd starts a unit).
set -u
name=$1 state=$2 procs_list=$3
shift 3
[ "${1:-}" = -- ] && shift
if [ -r "$procs_list" ]; then
  while IFS= read -r procs; do
    [ -n "$procs" ] && echo "$BASHPID" > "$procs" 2>/dev/null
  done < "$procs_list"
fi
rm -f "$state/$name.exit" "$state/$name.restarts"
stopping=0 child=""
# a TERM for the supervisor is meant for the process it runs, and is a stop: no restart after it
trap 'stopping=1; kill -TERM "$child" 2>/dev/null' TERM
restarts=0
while :; do
  # with every signal's default handling, as systemd starts a service: a disposition the caller
  # ignored (nohup's SIGHUP, say) is not inherited - bash alone cannot reset an ignored signal
  env --default-signal "$@" &
  child=$!
  echo "$child" > "$state/$name.pid.tmp" && mv -f "$state/$name.pid.tmp" "$state/$name.pid"
  while :; do
    wait "$child"
    rc=$?
    # wait returns early (status > 128) when the trap ran; the child may still be running
    kill -0 "$child" 2>/dev/null || break
  done
  echo "$rc" > "$state/$name.exit.tmp" && mv -f "$state/$name.exit.tmp" "$state/$name.exit"
  if [ "$stopping" != 0 ] || [ ! -r "$state/$name.restart" ]; then break; fi
  read -r policy seconds < "$state/$name.restart" || true
  if [ "${policy:-}" != always ] || ! [[ "${seconds:-}" =~ ^[0-9]+$ ]]; then break; fi
  restarts=$((restarts + 1))
  echo "$restarts" > "$state/$name.restarts"
  echo "supervise.sh: $name exited with status $rc; Restart=always: starting it again in ${seconds} s (restart $restarts, as containerd.service's RestartSec)" >&2
  # the unit's RestartSec - the behaviour modelled, not a wait for a condition; a TERM ends it
  sleep "$seconds" &
  wait $! 2>/dev/null || true
  [ "$stopping" = 0 ] || break
  if [ -n "$(tail -n +2 "$state/$name.restart")" ]; then
    tail -n +2 "$state/$name.restart" | bash >&2 ||
      echo "supervise.sh: the command before $name's restart failed (status $?); starting it anyway" >&2
  fi
  rm -f "$state/$name.exit"
done
