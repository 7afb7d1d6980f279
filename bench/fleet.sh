#!/usr/bin/env bash
# How the lab's cost grows with the fleet. For each size N it prints:
#   time from no cluster to N Ready nodes (lab.yml --tags environment)
#   time of steps 5-8 on that fleet (every node runs the toolkit DaemonSet)
#   time of a second full lab.yml run (no-op) and its changed count
#   peak resident memory of the control plane after the nodes and after step 8
#   the same N nodes made by bare kwokctl + one kubectl apply, as the reference
#   BENCH_SIZES="3 100 1000 5000" BENCH_RUNS=3 BENCH_BARE_RUNS=1 bench/fleet.sh
# Each size runs BENCH_RUNS times (default 3); a cell shows the median and [min-max]. The
# bare reference runs in the first BENCH_BARE_RUNS of them (default: all).
# Uses its own cluster and lab folder (gpu-incident-lab-fleet), never the trainee's.
set -euo pipefail
cd "$(dirname "$0")/.."
export ANSIBLE_FORCE_COLOR=0
. bench/lib.sh
bench_cluster gpu-incident-lab-fleet
sizes=${BENCH_SIZES:-3 100 1000 5000}
log=/tmp/bench-fleet-step.log
quiet() { quiet_to "$log" "$@"; }
changed() { changed_in "$log"; }
rss_mb() { peak_rss_mb "$name"; }
teardown() { quiet ansible-playbook -e "lab_cluster_name=$name" -e "lab_root=$root" playbooks/teardown.yml; rm -rf "$root"; }

runs=${BENCH_RUNS:-3}
bare_runs=${BENCH_BARE_RUNS:-$runs}   # the bare reference at 5000 nodes takes minutes: BENCH_BARE_RUNS=1
rows=()
for n in $sizes; do
 R=(); B=(); S=(); E=(); M1=(); M2=(); C=""; report=""
 for ((run = 1; run <= runs; run++)); do
  play=(ansible-playbook -e "lab_cluster_name=$name" -e "lab_root=$root" -e lab_node_count="$n")
  teardown
  t0=$(now); quiet "${play[@]}" lab.yml --tags environment; t1=$(now)
  ready=$(secs "$t0" "$t1"); rss_nodes=$(rss_mb)
  t0=$(now); quiet "${play[@]}" playbooks/cluster-steps.yml; t1=$(now)
  steps=$(secs "$t0" "$t1"); rss_steps=$(rss_mb)
  report=$(tr '\n' ' ' < "$root/out/rollout.txt")
  quiet "${play[@]}" playbooks/node-steps.yml   # steps 1-4 and the guard too, so the rerun below is a no-op
  quiet "${play[@]}" playbooks/guard.yml
  t0=$(now); quiet "${play[@]}" lab.yml; t1=$(now)
  rerun=$(secs "$t0" "$t1"); rerun_changed=$(changed)
  teardown
  bare="-"
  if ((run <= bare_runs)); then
    t0=$(now)
    quiet bare_cluster "$bin" "$name"
    quiet bare_nodes "$n" 900s
    t1=$(now); bare=$(secs "$t0" "$t1"); B+=("$bare")
    teardown
  fi
  R+=("$ready"); S+=("$steps"); E+=("$rerun"); M1+=("$rss_nodes"); M2+=("$rss_steps")
  C+="${C:+ }$rerun_changed"
  printf '  N=%s run %s: ready %ss (bare %ss) steps 5-8 %ss rerun %ss %s rss %s/%s MB %s\n' \
    "$n" "$run" "$ready" "$bare" "$steps" "$rerun" "$rerun_changed" "$rss_nodes" "$rss_steps" "$report" >&2
 done
 rows+=("| $n | $(spread "${R[@]}") | $(spread "${B[@]}") | $(spread "${S[@]}") | $(spread "${E[@]}") ($(tr ' ' '\n' <<< "$C" | sed '/^$/d' | sort -u | paste -sd/ -)) | $(spread "${M1[@]}") | $(spread "${M2[@]}") | $report |")
done

echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(date -u +%Y-%m-%d); $runs run(s) per size: median [min-max]"
echo
echo "| nodes | lab: no cluster -> N Ready (s) | bare kwokctl + kubectl apply (s) | steps 5-8 (s) | lab.yml rerun (s) | control plane MB after nodes | after step 8 | rollout.txt |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
