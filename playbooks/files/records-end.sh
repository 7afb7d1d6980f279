#!/usr/bin/env bash
# records-end.sh STATE_DIR [check]
#
# When a lab is torn down its records (grade reports, node facts, the drill in place, the
# diagnosis and its page) describe a lab that no longer runs: a new lab of the same name would
# show them as its own (the board's "active drill", the last grade). They are moved, never
# deleted, to STATE_DIR/ended/<UTC time>/; prints one JSON line {"changed": .., "kept_in": ..}.
set -euo pipefail
state=${1:?state folder} check=${2:-}
records=(grade-report.json grade-report.xml node-facts.json drill.json diagnosis.json diagnosis.html)
present=()
for name in "${records[@]}"; do
  [ -f "$state/$name" ] && present+=("$name")
done
if [ ${#present[@]} -eq 0 ]; then
  echo '{"changed": false, "kept_in": null}'
  exit 0
fi
dest="$state/ended/$(date -u +%Y%m%dT%H%M%SZ)"
if [ "$check" != check ]; then
  mkdir -p "$dest"
  chmod 700 "$state/ended" "$dest"
  for name in "${present[@]}"; do mv -f "$state/$name" "$dest/$name"; done
fi
printf '{"changed": true, "kept_in": "%s"}\n' "$dest"
