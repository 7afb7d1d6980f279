#!/usr/bin/env bash
# NVIDIA's toolkit installers (issue 49): what they cost here. Prints a Markdown table:
#   - each installer's build cold (an empty Go build cache, the module cache as it is) and warm;
#   - playbooks/toolkit.yml on a copy of the seed's config, first run and rerun, per version;
#   - with BENCH_TOOLKIT_NODE=1 and the default lab running: the DaemonSet on lab-node-1
#     (-e toolkit_target=node), deploy, rerun and state=absent, restart modes none and signal.
#   bench/toolkit.sh
# The cold builds use a temporary GOCACHE and leave the lab's binaries as they are (they build into
# a temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/ansible-playbook ] || { echo "bench/toolkit.sh: no .venv here - run make lab first" >&2; exit 2; }
# shellcheck disable=SC1091
source .venv/bin/activate
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
secs() { local s e; s=$(date +%s.%N); "$@" > "$work/last.log" 2>&1 || { echo "bench/toolkit.sh: failed: $*" >&2; tail -5 "$work/last.log" >&2; exit 1; }; e=$(date +%s.%N); printf '%.1f' "$(echo "$e - $s" | bc)"; }
recap() { grep -oE 'changed=[0-9]+' "$work/last.log" | tail -1; }

echo "| what | s | result |"
echo "|---|---|---|"
for group in "nvidia-ctk-installer" "nvidia-toolkit-v1.17.8" "nvidia-toolkit-v1.16.2 nvidia-toolkit-toolkit-v1.16.2 nvidia-toolkit-containerd-v1.16.2"; do
  mkdir -p "$work/cache" "$work/bin"
  cold=$(GOCACHE="$work/cache" secs bash -c "for c in $group; do toolchain/build.sh \$c $work/bin; done")
  warm=$(GOCACHE="$work/cache" secs bash -c "for c in $group; do toolchain/build.sh \$c $work/bin; done")
  echo "| build $group: cold / warm | $cold / $warm | $(go version -m "$work/bin/${group%% *}" | awk '$2 == "github.com/NVIDIA/nvidia-container-toolkit" {print $3; exit}') |"
  rm -rf "$work/cache"
done
mkdir -p "$work/lab/etc/containerd/conf.d"
cp tests/trainee/correct/etc/containerd/config.toml "$work/lab/etc/containerd/config.toml" 2>/dev/null ||
  printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n' > "$work/lab/etc/containerd/config.toml"
lab_version=$(awk '$1 == "require" && $2 == "github.com/NVIDIA/nvidia-container-toolkit" {print $3}' toolchain/nvidia-container-toolkit/go.mod)
for v in "$lab_version" v1.17.8 v1.16.2; do
  args=(playbooks/toolkit.yml -e "toolkit_version=$v" -e "toolkit_config_dir=$work/lab/etc/containerd" -e "lab_state_dir=$work/state")
  first=$(secs ansible-playbook "${args[@]}"); r1=$(recap)
  again=$(secs ansible-playbook "${args[@]}"); r2=$(recap)
  echo "| toolkit.yml (copy) $v: first / rerun | $first / $again | $r1 / $r2 |"
done
if [ "${BENCH_TOOLKIT_NODE:-0}" = 1 ]; then
  for mode in none signal; do
    deploy=$(secs ansible-playbook playbooks/toolkit.yml -e toolkit_target=node -e "toolkit_restart_mode=$mode"); r1=$(recap)
    again=$(secs ansible-playbook playbooks/toolkit.yml -e toolkit_target=node -e "toolkit_restart_mode=$mode"); r2=$(recap)
    gone=$(secs ansible-playbook playbooks/toolkit.yml -e toolkit_target=node -e state=absent); r3=$(recap)
    echo "| toolkit.yml (node, $mode): deploy / rerun / absent | $deploy / $again / $gone | $r1 / $r2 / $r3 |"
  done
fi
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
