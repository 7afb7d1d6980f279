#!/usr/bin/env bash
# lab-folder-claim.sh STATE_BASE CLUSTER LAB_ROOT KWOK_CLUSTERS [check]
#
# A lab is its cluster name and its state location (README "Labs side by side"); its lab folder
# (the trainee's files, which lab-node-1's containerd reads as its /etc) must be its own. Each
# lab records the folder it uses in STATE_BASE/<cluster>/lab-root. This refuses LAB_ROOT when
# another lab of the same state location records the same folder while that lab's cluster
# exists (KWOK_CLUSTERS/<its name>); a torn-down lab's claim lapses with its cluster. Otherwise
# it records LAB_ROOT for CLUSTER (not in check mode) and prints one JSON line {"changed": ..}.
set -euo pipefail
base=${1:?state base} cluster=${2:?cluster name} root=${3:?lab folder} clusters=${4:?kwok clusters folder}
check=${5:-}
want=$(realpath -m -- "$root")
shopt -s nullglob
for claim in "$base"/*/lab-root; do
  other=$(basename "$(dirname "$claim")")
  [ "$other" != "$cluster" ] || continue
  [ "$(cat "$claim" 2>/dev/null)" = "$want" ] || continue
  [ -d "$clusters/$other" ] || continue
  echo "the lab folder $want is the lab folder of another lab, $other (its record $claim; its cluster" \
       "$clusters/$other exists): two labs would grade, and boot lab-node-1 from, the same files." \
       "Give this lab its own: -e lab_root=$want-$cluster - or tear the other down first:" \
       "ansible-playbook playbooks/teardown.yml -e lab_cluster_name=$other" >&2
  exit 1
done
mine="$base/$cluster/lab-root"
if [ "$(cat "$mine" 2>/dev/null)" = "$want" ]; then
  echo '{"changed": false}'
elif [ "$check" = check ]; then
  echo '{"changed": true}'
else
  mkdir -p "$base/$cluster" && chmod 700 "$base/$cluster"
  printf '%s\n' "$want" > "$mine.tmp" && mv -f "$mine.tmp" "$mine"
  echo '{"changed": true}'
fi
