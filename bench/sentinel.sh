#!/usr/bin/env bash
# What the sentinel on lab-node-1 costs (issue 39): the whole lab from no cluster and the no-op
# rerun with -e lab_sentinel=false and true (the real lab-node-1 both times), alternating in one
# run; node-problem-detector's memory on the node (its process's VmRSS and VmHWM, found by its
# command line and the node's cgroup, and its container cgroup's peak, once the check has run);
# the cold build of NPD from an empty Go cache.
#   BENCH_RUNS=2 bench/sentinel.sh          BENCH_COLD=0 skips the cold build
# Prints a Markdown table. Uses clusters of its own (bench-npd-*), never the trainee's.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
source .venv/bin/activate
runs=${BENCH_RUNS:-2}
declare -A whole rerun
rss=() hwm=() peak=()
npd_pid() { # the node-problem-detector of this lab's node: the one whose config names the sentinel
  local p
  for p in $(pgrep -x node-problem-de || true); do
    if grep -qa "runtime-sentinel.json" "/proc/$p/cmdline" 2>/dev/null \
        && grep -q "gpu-incident-lab-$1" "/proc/$p/cgroup" 2>/dev/null; then echo "$p"; return; fi
  done
}
for i in $(seq 1 "$runs"); do
  for sentinel in false true; do
    bench_cluster "bench-npd-$sentinel-$i"
    extra=(-e "lab_root=$root" -e "lab_cluster_name=$name" -e "lab_sentinel=$sentinel")
    rm -rf "$root"
    t0=$(now); quiet_to "/tmp/$name.log" ansible-playbook lab.yml "${extra[@]}"; t1=$(now)
    quiet_to "/tmp/$name.rerun.log" ansible-playbook lab.yml "${extra[@]}"; t2=$(now)
    whole[$sentinel]+="$(secs "$t0" "$t1") "; rerun[$sentinel]+="$(secs "$t1" "$t2") "
    echo "run $i lab_sentinel=$sentinel: lab $(secs "$t0" "$t1") s, rerun $(secs "$t1" "$t2") s ($(changed_in "/tmp/$name.rerun.log"))" >&2
    if [ "$sentinel" = true ]; then
      id=$(sed -n 's/^CLUSTER_ID=//p' "${XDG_STATE_HOME:-$HOME/.local/state}/gpu-incident-lab/$name/node/node.env")
      "$bin/kubectl" --kubeconfig "$kubeconfig" wait --for=condition=RuntimeBreaksOnRestart=True node/lab-node-1 --timeout=90s >/dev/null
      pid=$(npd_pid "$id")
      rss+=("$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")")
      hwm+=("$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")")
      # the container's cgroup: what NPD and every run of the check were charged, at most
      cg=$(sed -n 's/^[0-9]*:memory://p' "/proc/$pid/cgroup")
      if [ -n "$cg" ]; then f=/sys/fs/cgroup/memory$cg/memory.max_usage_in_bytes
      else f=/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$pid/cgroup")/memory.peak; fi
      peak+=("$(( $(cat "$f" 2>/dev/null || echo 0) / 1048576 ))")
    fi
    quiet_to "/tmp/$name.teardown.log" ansible-playbook playbooks/teardown.yml "${extra[@]}"
    rm -rf "$root"
  done
done
cold="-"
if [ "${BENCH_COLD:-1}" = 1 ]; then
  tmp=$(mktemp -d)
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  t0=$(now); GOCACHE=$tmp/gocache quiet_to "$tmp/build.log" toolchain/build.sh node-problem-detector "$tmp/bin"; t1=$(now)
  cold=$(secs "$t0" "$t1")
fi
# shellcheck disable=SC2086
{
  echo "| what | lab_sentinel=false | true | difference |"
  echo "|---|---|---|---|"
  a=$(spread ${whole[false]}); b=$(spread ${whole[true]})
  echo "| lab.yml from no cluster (real lab-node-1), s | $a | $b | $(awk -v x="${a%% *}" -v y="${b%% *}" 'BEGIN{printf "%+.1f", y-x}') |"
  a=$(spread ${rerun[false]}); b=$(spread ${rerun[true]})
  echo "| no-op rerun (changed=0), s | $a | $b | $(awk -v x="${a%% *}" -v y="${b%% *}" 'BEGIN{printf "%+.1f", y-x}') |"
  echo "| node-problem-detector on the node, VmRSS / VmHWM, MB | - | $(spread "${rss[@]}") / $(spread "${hwm[@]}") | |"
  echo "| its container's cgroup, peak (NPD + the check's runs), MB | - | $(spread "${peak[@]}") | |"
  echo "| cold build of node-problem-detector (empty GOCACHE), s | - | $cold | |"
}
