#!/usr/bin/env bash
# What the GPU half of lab-node-1 costs (issue 30): the whole lab from no cluster and the no-op
# rerun with -e lab_gpu_stack=none and nvidia (the real lab-node-1 both times), alternating in one
# run; and the warm build of NVIDIA's four binaries and the mock. Warm: binaries built once.
#   BENCH_RUNS=2 bench/gpu-stack.sh
# Prints a Markdown table. Uses clusters of its own (bench-gpu-*), never the trainee's.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
source .venv/bin/activate
runs=${BENCH_RUNS:-2}
declare -A whole rerun
for i in $(seq 1 "$runs"); do
  for stack in none nvidia; do
    bench_cluster "bench-gpu-$stack-$i"
    extra=(-e "lab_root=$root" -e "lab_cluster_name=$name" -e "lab_gpu_stack=$stack")
    rm -rf "$root"
    t0=$(now); quiet_to "/tmp/$name.log" ansible-playbook lab.yml "${extra[@]}"; t1=$(now)
    quiet_to "/tmp/$name.rerun.log" ansible-playbook lab.yml "${extra[@]}"; t2=$(now)
    whole[$stack]+="$(secs "$t0" "$t1") "; rerun[$stack]+="$(secs "$t1" "$t2") "
    echo "run $i lab_gpu_stack=$stack: lab $(secs "$t0" "$t1") s, rerun $(secs "$t1" "$t2") s ($(changed_in "/tmp/$name.rerun.log"))" >&2
    quiet_to "/tmp/$name.teardown.log" ansible-playbook playbooks/teardown.yml "${extra[@]}"
    rm -rf "$root"
  done
done
# the warm build: NVIDIA's four from Go's cache (a copy of the binaries aside), the mock with gcc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(now)
for c in nvidia-device-plugin config-manager nvidia-container-runtime nvidia-ctk; do
  quiet_to "$tmp/build-$c.log" toolchain/build.sh "$c" "$tmp/bin"
done
t1=$(now)
quiet_to "$tmp/mock.log" bash nvml_mock/build.sh --driver-root "$tmp/root"
t2=$(now)
# shellcheck disable=SC2086
{
  echo "| what | lab_gpu_stack=none | nvidia | difference |"
  echo "|---|---|---|---|"
  a=$(spread ${whole[none]}); b=$(spread ${whole[nvidia]})
  echo "| lab.yml from no cluster (real lab-node-1), s | $a | $b | $(awk -v x="${a%% *}" -v y="${b%% *}" 'BEGIN{printf "%+.1f", y-x}') |"
  a=$(spread ${rerun[none]}); b=$(spread ${rerun[nvidia]})
  echo "| no-op rerun (changed=0), s | $a | $b | $(awk -v x="${a%% *}" -v y="${b%% *}" 'BEGIN{printf "%+.1f", y-x}') |"
  echo "| warm build of the four NVIDIA binaries, s | - | $(secs "$t0" "$t1") | |"
  echo "| the mock NVML library and its reader (gcc), s | - | $(secs "$t1" "$t2") | |"
}
