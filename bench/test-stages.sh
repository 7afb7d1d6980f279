#!/usr/bin/env bash
# Where `make test` spends its time: runs it (or BENCH_TARGET) with every output line stamped, then
# prints a table - the stages' start offsets, each lane's time (make test's own "lane ... in N s"
# lines), and the slowest pytest items (PYTEST_ADDOPTS=--durations). Run it from a clean clone beside
# a running lab, as CI does.
#   bench/test-stages.sh [LOG]          (default LOG: .cache/bench-test-stages.log)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
log=${1:-.cache/bench-test-stages.log}
mkdir -p "$(dirname "$log")"
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:---durations=25 -p no:cacheprovider}"
start=$(date +%s)
make "${BENCH_TARGET:-test}" 2>&1 | while IFS= read -r line; do printf '%(%s)T %s\n' -1 "$line"; done > "$log"
status=${PIPESTATUS[0]}
total=$(( $(date +%s) - start ))
printf '\n| what | starts at (s) |\n|---|---|\n'
awk -v s="$start" '
  / \.venv\/bin\/yamllint / {print "| lint |", $1 - s, "|"}
  / CONTAINERD_ORACLE=/ {print "| unit |", $1 - s, "|"}
  / tools\/build_collection\.py / && !c++ {print "| collection + sanity |", $1 - s, "|"}
  / molecule test --all/ {print "| molecule |", $1 - s, "|"}
  / pytest -q tests\/cluster/ {print "| tests/cluster |", $1 - s, "|"}' "$log"
printf '\n| lane | seconds |\n|---|---|\n'
grep -oE 'make test: lane [a-z]+ \([^)]*\) (passed|FAILED) in [0-9]+ s' "$log" |
  sed -E 's/make test: lane ([a-z]+) \(([^)]*)\) (passed|FAILED) in ([0-9]+) s/| \1 (\2, \3) | \4 |/'
printf '\n| slowest pytest items | seconds |\n|---|---|\n'
grep -E '^[0-9]+ [0-9.]+s (call|setup|teardown) ' "$log" | awk '{printf "| %s %s | %s |\n", $3, $4, $2}' |
  sort -t'|' -k3 -rn | head -15
printf '\nmake %s: exit %s, %s s in all; the whole output: %s\n' "${BENCH_TARGET:-test}" "$status" "$total" "$log"
exit "$status"
