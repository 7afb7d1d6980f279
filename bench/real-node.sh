#!/usr/bin/env bash
# What the real lab-node-1 costs: the whole lab from no cluster, and the no-op rerun, with
# -e lab_real_node=false (all kwok) and true, alternating in one run; the reboot; the node's
# memory (its cgroup's usage: containerd, shims, kubelet, containers). Warm: binaries built.
#   BENCH_RUNS=3 bench/real-node.sh
# Prints a Markdown table. Uses clusters of its own (bench-rn-*), never the trainee's.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
source .venv/bin/activate
runs=${BENCH_RUNS:-2}
declare -A whole rerun
reboot_s=() mem=()
for i in $(seq 1 "$runs"); do
  for real in false true; do
    bench_cluster "bench-rn-$real-$i"
    extra=(-e "lab_root=$root" -e "lab_cluster_name=$name" -e "lab_real_node=$real")
    rm -rf "$root"
    t0=$(now); quiet_to "/tmp/$name.log" ansible-playbook lab.yml "${extra[@]}"; t1=$(now)
    quiet_to "/tmp/$name.rerun.log" ansible-playbook lab.yml "${extra[@]}"; t2=$(now)
    whole[$real]+="$(secs "$t0" "$t1") "; rerun[$real]+="$(secs "$t1" "$t2") "
    echo "run $i real_node=$real: lab $(secs "$t0" "$t1") s, rerun $(secs "$t1" "$t2") s ($(changed_in "/tmp/$name.rerun.log"))" >&2
    if [ "$real" = true ]; then
      id=$(awk -F= '$1 == "CLUSTER_ID" {print $2}' "${XDG_STATE_HOME:-$HOME/.local/state}/gpu-incident-lab/$name/node/node.env")
      mem+=("$(( $(cat "/sys/fs/cgroup/memory/gpu-incident-lab-$id/memory.usage_in_bytes" 2>/dev/null || echo 0) / 1048576 ))")
      t3=$(now); quiet_to "/tmp/$name.reboot.log" ansible-playbook playbooks/reboot.yml "${extra[@]}"; t4=$(now)
      reboot_s+=("$(secs "$t3" "$t4")")
    fi
    quiet_to "/tmp/$name.teardown.log" ansible-playbook playbooks/teardown.yml "${extra[@]}"
  done
done
# shellcheck disable=SC2086
{
  echo "| what | all kwok (lab_real_node=false) | real lab-node-1 | difference |"
  echo "|---|---|---|---|"
  a=$(spread ${whole[false]}); b=$(spread ${whole[true]})
  echo "| lab.yml from no cluster, s | $a | $b | $(awk -v x="${a%% *}" -v y="${b%% *}" 'BEGIN{printf "%+.1f", y-x}') |"
  a=$(spread ${rerun[false]}); b=$(spread ${rerun[true]})
  echo "| no-op rerun (changed=0), s | $a | $b | $(awk -v x="${a%% *}" -v y="${b%% *}" 'BEGIN{printf "%+.1f", y-x}') |"
  echo "| reboot.yml to NotReady (1.6.20, seed's files), s | - | $(spread "${reboot_s[@]}") | |"
  echo "| the node's memory after lab.yml (cgroup usage), MB | - | $(spread "${mem[@]}") | |"
}
