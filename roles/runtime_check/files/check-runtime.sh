#!/usr/bin/env bash
# check-runtime.sh [RUNTIME]
#
# Is a containerd runtime handler really loaded? Judged by what containerd
# loads (`containerd config dump`, containerd found through PATH), never by
# what a config file on disk says. Post-boot node check or CI gate.
#
#   exit 0  the dump has the runtime table for RUNTIME (default: nvidia)
#   exit 1  it has not
#   exit 2  containerd is missing or the dump failed (never a pass by accident)
#
# The match is the table header itself, in the 1.x spelling
#   [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
# and the 2.x spelling
#   [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]
# so nvidia-cdi, nvidia-legacy, comments and values do not count.
# Note: the dump re-reads the config files, so it shows what the next start
# of containerd loads; `crictl info` shows what a running daemon holds.
set -u

runtime=${1:-nvidia}
case "$runtime" in
  ''|*[!A-Za-z0-9_.-]*)
    echo "check-runtime: runtime name '$runtime' is not a runtime handler name ([A-Za-z0-9_.-])" >&2
    exit 2 ;;
esac

if ! command -v containerd >/dev/null 2>&1; then
  echo "check-runtime: containerd not found on PATH; cannot tell whether '$runtime' is loaded" >&2
  exit 2
fi

errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
if ! dump=$(containerd config dump 2>"$errors"); then
  echo "check-runtime: 'containerd config dump' failed; cannot tell whether '$runtime' is loaded:" >&2
  sed 's/^/  /' "$errors" >&2
  exit 2
fi
if [ -z "$dump" ]; then
  echo "check-runtime: 'containerd config dump' printed nothing" >&2
  exit 2
fi

name=${runtime//./\\.}
plugin='(\"[^\"]*cri[^\"]*\"|'"'"'[^'"'"']*cri[^'"'"']*'"'"'|cri)'
header="^[[:space:]]*\[plugins\.${plugin}\.containerd\.runtimes\.(${name}|\"${name}\"|'${name}')[].]"

loaded=$(printf '%s\n' "$dump" \
  | sed -nE "s/^[[:space:]]*\[plugins\.${plugin}\.containerd\.runtimes\.([^].]+)\][[:space:]]*$/\2/p" \
  | tr -d "\"'" | sort -u | paste -sd, -)

if printf '%s\n' "$dump" | grep -qE "$header"; then
  echo "check-runtime: runtime '$runtime' is loaded (containerd config dump: ${loaded:-none})"
  exit 0
fi
echo "check-runtime: runtime '$runtime' is NOT loaded; containerd config dump lists: ${loaded:-no runtimes}" >&2
exit 1
