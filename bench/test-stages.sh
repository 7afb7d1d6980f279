#!/usr/bin/env bash
# Where `make test` spends its time: runs it (or BENCH_TARGET) with every output line stamped, then
# prints a table - the stages' start offsets, each lane's time (make test's own "lane ... in N s"
# lines), the slowest pytest items (PYTEST_ADDOPTS=--durations), and how busy the machine's cores
# were (/proc/stat every 10 s: are the lanes waiting or computing?). Run it from a clean clone beside
# a running lab, as CI does.
#   bench/test-stages.sh [LOG]          (default LOG: .cache/bench-test-stages.log)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
log=${1:-.cache/bench-test-stages.log}
mkdir -p "$(dirname "$log")"
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:---durations=25 -p no:cacheprovider}"
start=$(date +%s)
cpu() { # every 10 s: the seconds since start and the cores' busy share (%) in those 10 s (no iowait)
  local a b
  read -r _ a < /proc/stat
  while sleep 10; do   # the sampling period, not a wait for a condition
    read -r _ b < /proc/stat
    python3 -c 'import sys; a, b = ([int(x) for x in s.split()] for s in sys.argv[1:3]); d = [y - x for x, y in zip(a, b)]
print(int(sys.argv[3]), round(100 * (sum(d) - d[3] - d[4]) / max(sum(d), 1)))' "$a" "$b" "$(( $(date +%s) - start ))"
    a=$b
  done > "$log.cpu"
}
cpu & sampler=$!
make "${BENCH_TARGET:-test}" 2>&1 | while IFS= read -r line; do printf '%(%s)T %s\n' -1 "$line"; done > "$log"
status=${PIPESTATUS[0]}
total=$(( $(date +%s) - start ))
kill "$sampler" 2>/dev/null
printf '\n| lane | starts at (s) |\n|---|---|\n'
awk -v s="$start" '/make test: lane [a-z-]+ started/ {print "|", $5, "|", $1 - s, "|"}' "$log"
printf '\n| lane | seconds | CPU seconds of its processes |\n|---|---|---|\n'
grep -oE 'make test: lane [a-z-]+ \([^)]*\) (passed|FAILED) in [0-9]+ s( \(CPU [0-9]+ s\))?' "$log" |
  sed -E 's/make test: lane ([a-z-]+) \(([^)]*)\) (passed|FAILED) in ([0-9]+) s( \(CPU ([0-9]+) s\))?/| \1 (\2, \3) | \4 | \6 |/'
printf '\n| slowest pytest items | seconds |\n|---|---|\n'
grep -E '^[0-9]+ [0-9.]+s (call|setup|teardown) ' "$log" | awk '{printf "| %s %s | %s |\n", $3, $4, $2}' |
  sort -t'|' -k3 -rn | head -15
printf '\n| minutes | cores busy (%%, 2 cores = 100) |\n|---|---|\n'
awk '{m = int($1 / 300); s[m] += $2; n[m]++} END {for (k in s) printf "| %d-%d | %d |\n", 5 * k, 5 * k + 5, s[k] / n[k]}' "$log.cpu" | sort -k2,2n
awk '{s += $2; n++} END {if (n) printf "cores busy over the run: %d %%\n", s / n}' "$log.cpu"
printf '\nmake %s: exit %s, %s s in all; the whole output: %s\n' "${BENCH_TARGET:-test}" "$status" "$total" "$log"
exit "$status"
