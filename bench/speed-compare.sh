#!/usr/bin/env bash
# The lab's own speed at two revisions, alternating in one run, as a Markdown table (issue 31:
# a restructuring must not cost the trainee time):
#   bench/speed-compare.sh BEFORE AFTER          e.g. bench/speed-compare.sh 03f87d0 HEAD
#   BENCH_RUNS=3 bench/speed-compare.sh BEFORE AFTER
# Each revision is checked out into a worktree of its own (sharing this checkout's .venv and
# the built binaries); per run and revision: lab.yml -e lab_real_node=false from no cluster, its
# no-op rerun, grade.yml of all eight steps. One cluster and lab folder of the script's own.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 BEFORE AFTER (two git revisions)" >&2; exit 2; }
export ANSIBLE_FORCE_COLOR=0
. bench/lib.sh
bench_cluster gpu-incident-lab-compare
runs=${BENCH_RUNS:-2}
here=$PWD
log=/tmp/bench-speed-compare.log
quiet() { quiet_to "$log" "$@"; }
timed() { local t0; t0=$(now); quiet "$@"; secs "$t0" "$(now)"; }
declare -A tree L N G C
for rev in "$1" "$2"; do
  sha=$(git rev-parse --short "$rev^{commit}")
  tree[$rev]=$(mktemp -d "/tmp/bench-compare-$sha.XXXX")
  git worktree add --detach -q "${tree[$rev]}" "$sha"
  ln -s "$here/.venv" "${tree[$rev]}/.venv"
done
cleanup() { for rev in "$1" "$2"; do git worktree remove --force "${tree[$rev]}" 2>/dev/null || true; done; }
trap 'cleanup "$1" "$2"' EXIT
play() { (cd "$1" && shift && "$here/.venv/bin/ansible-playbook" -e "lab_cluster_name=$name" -e "lab_root=$root" "$@"); }
teardown() { quiet play "$1" playbooks/teardown.yml; rm -rf "$root"; }
teardown "${tree[$1]}"
for ((run = 1; run <= runs; run++)); do
  for rev in "$1" "$2"; do
    t=${tree[$rev]}
    L[$rev]+="$(timed play "$t" -e lab_real_node=false lab.yml) "
    N[$rev]+="$(timed play "$t" -e lab_real_node=false lab.yml) "; C[$rev]=$(changed_in "$log")
    # (before 2026-12-03 grade.yml did not make the state folder that lab_real_node=false leaves out)
    mkdir -p "${XDG_STATE_HOME:-$HOME/.local/state}/gpu-incident-lab/$name"
    G[$rev]+="$(timed play "$t" -e lab_real_node=false playbooks/grade.yml) "
    teardown "$t"
  done
done
echo
echo "| revision | lab.yml, no cluster -> step 8 (s) | no-op rerun (s) | grade.yml, eight steps (s) |"
echo "|---|---|---|---|"
for rev in "$1" "$2"; do
  # shellcheck disable=SC2086  # the values are words
  echo "| $rev ($(git rev-parse --short "$rev^{commit}")) | $(spread ${L[$rev]}) | $(spread ${N[$rev]}) (${C[$rev]}) | $(spread ${G[$rev]}) |"
done
echo
echo "median [min-max] of $runs runs each, alternating. Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(date -u +%Y-%m-%d); ansible-core $(.venv/bin/ansible --version | head -1 | grep -o '[0-9.]*' | head -1)"
