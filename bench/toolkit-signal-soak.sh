#!/usr/bin/env bash
# NVIDIA's installer in restart mode signal, N rollouts and deletions on the default lab's real
# node (issue 47's CI failure, issue 49): how often the installer restarts itself around
# containerd's restart, and how often its TERM cleanup leaves containerd unrestarted (the play then
# restarts it - docs/toolkit.md, "Why it receives a signal"). One line per round, a summary.
#   bench/toolkit-signal-soak.sh N        (the default lab running: make lab)
# BENCH_LOAD=1 keeps both cores busy meanwhile (two spinning python3 processes), as a test run does.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: bench/toolkit-signal-soak.sh N}
[ -x .venv/bin/ansible-playbook ] || { echo "bench/toolkit-signal-soak.sh: no .venv here - run make lab first" >&2; exit 2; }
work=$(mktemp -d)
spinners=()
cleanup() { [ ${#spinners[@]} -eq 0 ] || kill "${spinners[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
if [ "${BENCH_LOAD:-0}" = 1 ]; then
  for _ in 1 2; do python3 -c 'while True: pass' & spinners+=($!); done
fi
play() { .venv/bin/ansible-playbook "$@" > "$work/last.log" 2>&1 || { echo "bench/toolkit-signal-soak.sh: failed: ansible-playbook $*" >&2; tail -20 "$work/last.log" >&2; exit 1; }; }
restarts_seen=0 missed=0
echo "| round | rollout s | installer restarts | deletion s | cleanup restarted containerd | containerd after | load (1 min) |"
echo "|---|---|---|---|---|---|---|"
for i in $(seq 1 "$n"); do
  s=$(date +%s.%N); play playbooks/toolkit.yml -e toolkit_restart_mode=signal; e=$(date +%s.%N)
  rollout=$(printf '%.1f' "$(echo "$e - $s" | bc)")
  restarts=$(tr '\n' ' ' < "$work/last.log" | grep -oE 'settled: the installer waits for its signal \(container [0-9a-f]+, restarts [0-9]+' | grep -oE '[0-9]+$' || echo "?")
  s=$(date +%s.%N); play playbooks/toolkit.yml -e state=absent; e=$(date +%s.%N)
  deletion=$(printf '%.1f' "$(echo "$e - $s" | bc)")
  if tr '\n' ' ' < "$work/last.log" | sed "s/''/'/g" | tr -s ' ' | grep -q "NVIDIA's cleanup did not restart containerd"; then
    cleaned=no; missed=$((missed + 1))
  else
    cleaned=yes
  fi
  [ "$restarts" = 0 ] || [ "$restarts" = "?" ] || restarts_seen=$((restarts_seen + 1))
  after=$(tr '\n' ' ' < "$work/last.log" | tr -s ' ' | grep -oE "(it runs|containerd runs) [a-z, -]+(, as before the installer)?" | tail -1)
  echo "| $i | $rollout | $restarts | $deletion | $cleaned | ${after:-?} | $(cut -d' ' -f1 /proc/loadavg) |"
done
echo
echo "rounds: $n; rollouts where the installer restarted itself: $restarts_seen; deletions whose cleanup left containerd unrestarted (the play restarted it): $missed"
