#!/usr/bin/env bash
# Timings of the lab on this machine, printed as a Markdown table.
#   bench/lab-timings.sh             warm figures (binaries already built)
#   BENCH_COLD=1 bench/lab-timings.sh   also a cold toolchain build (empty Go caches; ~20 min)
# Uses a cluster and lab folder of its own (gpu-incident-lab-bench), never the trainee's.
set -euo pipefail
cd "$(dirname "$0")/.."
export ANSIBLE_FORCE_COLOR=0
. bench/lib.sh
bench_cluster gpu-incident-lab-bench
play=(ansible-playbook -e "lab_cluster_name=$name" -e "lab_root=$root")
rows=()
row() { rows+=("| $1 | $2 | $3 |"); printf '  %-55s %8s s  %s\n' "$1" "$2" "$3" >&2; }
quiet() { quiet_to /tmp/bench-step.log "$@"; }
changed() { changed_in /tmp/bench-step.log; }
teardown() { quiet "${play[@]}" playbooks/teardown.yml; rm -rf "$root"; }

if [ "${BENCH_COLD:-0}" = 1 ]; then
  cold=$(mktemp -d)
  t0=$(now)
  for c in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl; do
    GOCACHE=$cold/gocache GOMODCACHE=$cold/gomod quiet toolchain/build.sh "$c" "$cold/bin"
  done
  row "cold toolchain build (7 binaries, empty Go caches)" "$(secs "$t0" "$(now)")" "target <= 1500 s"
  rm -rf "$cold"
fi

teardown
t0=$(now); quiet "${play[@]}" lab.yml --tags environment; t1=$(now)
row "lab.yml --tags environment: no cluster -> 3 Ready nodes" "$(secs "$t0" "$t1")" "target <= 30 s"
rss=$(peak_rss_mb "$name")
t0=$(now); quiet "${play[@]}" lab.yml --tags environment; t1=$(now)
row "same, second run (no-op)" "$(secs "$t0" "$t1")" "$(changed); target <= 15 s"
t0=$(now); ANSIBLE_STRATEGY=mitogen_linear quiet "${play[@]}" lab.yml --tags environment; t1=$(now)
row "same, no-op, with Mitogen (ANSIBLE_STRATEGY=mitogen_linear, opt-in)" "$(secs "$t0" "$t1")" "$(changed)"
teardown

# the same cluster and nodes with bare kwokctl + kubectl, for Ansible's overhead
t0=$(now)
quiet bare_cluster "$bin" "$name"
quiet bare_nodes 3 120s
t1=$(now)
bare=$(secs "$t0" "$t1")
row "bare kwokctl create + kubectl apply: 3 Ready nodes" "$bare" "reference"
teardown

# the lab's work up to step 8 against a bare script of the same work (bench/bare-lab.sh:
# kwokctl, kubectl, heredocs, tomllib; no checks), BENCH_RUNS times each (default 3)
runs=${BENCH_RUNS:-3}
L=(); M=(); S=()
for ((run = 1; run <= runs; run++)); do
  t0=$(now); quiet bench/bare-lab.sh "$name" "$root"; t1=$(now); S+=("$(secs "$t0" "$t1")")
  teardown
  t0=$(now); quiet "${play[@]}" lab.yml --skip-tags guard; t1=$(now); L+=("$(secs "$t0" "$t1")")
  teardown
  t0=$(now); ANSIBLE_STRATEGY=mitogen_linear quiet "${play[@]}" lab.yml --skip-tags guard; t1=$(now)
  M+=("$(secs "$t0" "$t1")")
  teardown
done
bare8=$(spread "${S[@]}"); lab8=$(spread "${L[@]}"); mito8=$(spread "${M[@]}")
ratio() { awk -v a="${1%% *}" -v b="${bare8%% *}" 'BEGIN { printf "%.1fx the bare script", a / b }'; }
row "bare script of the same work (bench/bare-lab.sh): no cluster -> step 8" "$bare8" "reference; $runs runs, median [min-max]"
row "lab.yml --skip-tags guard: no cluster -> step 8" "$lab8" "$(ratio "$lab8"); target <= 2x (issue 10)"
row "same, with Mitogen (opt-in)" "$mito8" "$(ratio "$mito8")"

t0=$(now); quiet "${play[@]}" lab.yml; t1=$(now)
whole=$(secs "$t0" "$t1")
row "lab.yml: no cluster -> all eight steps" "$whole" "target <= 90 s"
t0=$(now); quiet "${play[@]}" lab.yml; t1=$(now)
row "lab.yml second run (no-op)" "$(secs "$t0" "$t1")" "$(changed); target < 10 s (issue 10)"
t0=$(now); ANSIBLE_STRATEGY=mitogen_linear quiet "${play[@]}" lab.yml; t1=$(now)
row "same, no-op, with Mitogen (ANSIBLE_STRATEGY=mitogen_linear, opt-in)" "$(secs "$t0" "$t1")" "$(changed)"
rss_after=$(peak_rss_mb "$name")
teardown
t0=$(now); ANSIBLE_STRATEGY=mitogen_linear quiet "${play[@]}" lab.yml; t1=$(now)
row "lab.yml: no cluster -> all eight steps, with Mitogen (opt-in)" "$(secs "$t0" "$t1")" "$(changed)"
teardown

echo
echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(date -u +%Y-%m-%d)"
echo
echo "| what | seconds | note |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "| peak resident memory of the control plane (sum of VmHWM) | ${rss} MB after nodes, ${rss_after} MB after eight steps | target < 600 MB |"
