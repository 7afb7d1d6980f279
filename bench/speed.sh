#!/usr/bin/env bash
# The lab against a bare script of the same work, alternating in one run (issue 25's targets),
# printed as a Markdown table:
#   bench/speed.sh                 BENCH_RUNS=2 runs of each, kwok-only, then the real node once
#   BENCH_RUNS=3 BENCH_REAL=0 bench/speed.sh
# Rows: the whole lab from no cluster (lab.yml -e lab_real_node=false), the no-op rerun, grading
# all eight steps - each with the default executor, and the same with the lab's modules on
# Ansible's normal AnsiballZ path (GPU_INCIDENT_LAB_IN_WORKER=0) to show what the in-worker
# action saves; then what the real lab-node-1 adds. Uses a cluster and lab folder of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
export ANSIBLE_FORCE_COLOR=0
. bench/lib.sh
bench_cluster gpu-incident-lab-speed
runs=${BENCH_RUNS:-2}
play=(ansible-playbook -e "lab_cluster_name=$name" -e "lab_root=$root")
log=/tmp/bench-speed.log
quiet() { quiet_to "$log" "$@"; }
teardown() { quiet "${play[@]}" playbooks/teardown.yml; rm -rf "$root"; }
timed() { local t0; t0=$(now); quiet "$@"; secs "$t0" "$(now)"; }

B=(); L=(); N=(); G=(); LS=(); NS=(); GS=()
teardown
for ((run = 1; run <= runs; run++)); do
  B+=("$(timed bench/bare-lab.sh "$name" "$root")"); teardown
  L+=("$(timed "${play[@]}" -e lab_real_node=false lab.yml)")
  N+=("$(timed "${play[@]}" -e lab_real_node=false lab.yml)"); noop=$(changed_in "$log")
  G+=("$(timed "${play[@]}" -e lab_real_node=false playbooks/grade.yml)")
  teardown
  LS+=("$(GPU_INCIDENT_LAB_IN_WORKER=0 timed "${play[@]}" -e lab_real_node=false lab.yml)")
  NS+=("$(GPU_INCIDENT_LAB_IN_WORKER=0 timed "${play[@]}" -e lab_real_node=false lab.yml)")
  GS+=("$(GPU_INCIDENT_LAB_IN_WORKER=0 timed "${play[@]}" -e lab_real_node=false playbooks/grade.yml)")
  teardown
done
bare=$(spread "${B[@]}")
x() { awk -v a="${1%% *}" -v b="${bare%% *}" 'BEGIN { printf "%.2fx the bare script", a / b }'; }
echo
echo "| what | seconds (median [min-max], $runs runs) | against the bare script | target |"
echo "|---|---|---|---|"
echo "| bare script of the same work (bench/bare-lab.sh): no cluster -> step 8 | $bare | reference | |"
echo "| lab.yml -e lab_real_node=false: no cluster -> step 8 | $(spread "${L[@]}") | $(x "$(spread "${L[@]}")") | <= 2x |"
echo "| same, second run (no-op, $noop) | $(spread "${N[@]}") | $(x "$(spread "${N[@]}")") | <= 0.6x |"
echo "| grade.yml, all eight steps | $(spread "${G[@]}") | | <= 5 s |"
echo "| lab.yml, modules on the AnsiballZ path (GPU_INCIDENT_LAB_IN_WORKER=0) | $(spread "${LS[@]}") | $(x "$(spread "${LS[@]}")") | |"
echo "| same, no-op | $(spread "${NS[@]}") | $(x "$(spread "${NS[@]}")") | |"
echo "| grade.yml, AnsiballZ path | $(spread "${GS[@]}") | | |"

if [ "${BENCH_REAL:-1}" = 1 ]; then
  real=$(timed "${play[@]}" -e lab_real_node=true lab.yml)
  realnoop=$(timed "${play[@]}" -e lab_real_node=true lab.yml); realchanged=$(changed_in "$log")
  teardown
  echo "| lab.yml with the real lab-node-1 (lab_real_node=true, 1 run): no cluster -> step 8 | $real | $(x "$real") | |"
  echo "| same, no-op ($realchanged) | $realnoop | $(x "$realnoop") | |"
fi
echo
echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(date -u +%Y-%m-%d); ansible-core $(ansible --version | head -1 | grep -o '[0-9.]*' | head -1)"
