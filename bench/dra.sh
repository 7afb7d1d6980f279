#!/usr/bin/env bash
# What GPUs by ResourceClaim cost on the default lab (issue 48): playbooks/dra.yml making lab-node-2
# real (containerd 2.2.0, NVIDIA's DRA kubelet plugin) until its GPUs are ResourceSlices, the no-op
# rerun, the switch to containerd 1.6.20 and back, a MIG layout (all-balanced) and back, and
# state=absent - N rounds, a line per step, then the build of the plugin from a warm Go cache.
#   bench/dra.sh [N]        (the default lab running: make lab; lab-node-2 ends a kwok node again)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1}
[ -x .venv/bin/ansible-playbook ] || { echo "bench/dra.sh: no .venv here - run make lab first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=${XDG_CACHE_HOME:-$HOME/.cache}/gpu-incident-lab/bin
timed() { # LABEL ARGS...: one ansible-playbook run, its seconds and recap
  local label=$1 s e; shift
  s=$(date +%s.%N)
  .venv/bin/ansible-playbook playbooks/dra.yml "$@" > "$work/last.log" 2>&1 ||
    { echo "bench/dra.sh: failed: ansible-playbook playbooks/dra.yml $*" >&2; tail -20 "$work/last.log" >&2; exit 1; }
  e=$(date +%s.%N)
  printf '| %s | %s | %.1f | %s | %s |\n' "$round" "$label" "$(echo "$e - $s" | bc)" \
    "$(grep -oE 'changed=[0-9]+' "$work/last.log" | tail -1)" "$(cut -d' ' -f1 /proc/loadavg)"
}
echo "| round | step | seconds | recap | load (1 min) |"
echo "|---|---|---|---|---|"
for round in $(seq 1 "$n"); do
  timed "lab-node-2 real, its 4 GPUs published (containerd 2.2.0)"
  timed "no-op rerun"
  timed "containerd 1.6.20 (restart, plugin again)" -e dra_node_containerd=1.6.20
  timed "containerd 2.2.0 again" -e dra_node_containerd=2.2.0
  timed "MIG layout all-balanced (mig-parted, plugin restarted, 16 MIG devices)" -e dra_mig_config=all-balanced
  timed "whole GPUs again (all-disabled)" -e dra_mig_config=all-disabled
  timed "state=absent (kwok node again)" -e state=absent
done
echo
s=$(date +%s.%N)
bash toolchain/build.sh gpu-kubelet-plugin "$work/bin" > "$work/build.log" 2>&1 || { tail -5 "$work/build.log" >&2; exit 1; }
e=$(date +%s.%N)
printf 'gpu-kubelet-plugin build, warm Go cache (a fresh output folder): %.1f s; installed: %s\n' \
  "$(echo "$e - $s" | bc)" "$("$bin/gpu-kubelet-plugin" --version 2>/dev/null | head -1)"
