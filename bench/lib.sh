#!/usr/bin/env bash
# Helpers the bench scripts share (sourced, not run).

# the control-plane binaries the lab built
bin=${LAB_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-incident-lab/bin}

# bench_cluster NAME: the cluster and lab folder of a bench script - its own, never the
# trainee's. Sets name, root and kubeconfig.
# shellcheck disable=SC2034  # name, root, kubeconfig: set for the script that sources this
bench_cluster() {
  name=$1
  root=/tmp/$1
  kubeconfig=$HOME/.kwok/clusters/$1/kubeconfig.yaml
}

now() { date +%s.%N; }

# spread VALUES...: "median [min-max]" (just the value for one)
spread() {
  printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {m=v[int((NR+1)/2)]; if (NR>1) printf "%s [%s-%s]", m, v[1], v[NR]; else printf "%s", m}'
}

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# quiet LOG CMD...: run CMD with its output in LOG; on failure show the tail and stop.
quiet_to() {
  local log=$1; shift
  "$@" > "$log" 2>&1 || { tail -40 "$log" >&2; exit 1; }
}

# changed_in LOG: the last changed=N of a playbook log.
changed_in() { grep -Eo 'changed=[0-9]+' "$1" | tail -1; }

# peak_rss_mb CLUSTER: sum of VmHWM of the kwok cluster's processes, MB.
peak_rss_mb() {
  local total=0 pid kb f
  for f in "$HOME/.kwok/clusters/$1"/pids/*.pid; do
    pid=$(cat "$f"); kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    total=$((total + ${kb:-0}))
  done
  echo $((total / 1024))
}

# bare_cluster BIN NAME: the same cluster created by kwokctl alone, for reference - in its turn
# with other labs (the lock components.sh takes: kwokctl probes for free ports; -o: the components
# it leaves running do not hold the lock).
bare_cluster() {
  KWOK_WORKDIR=$HOME/.kwok PATH=$1:$PATH flock -o "${COMPONENTS_LOCK:-/tmp/gpu-incident-lab-kwokctl.lock}" "$1/kwokctl" create cluster --name "$2" --runtime binary \
    --kube-apiserver-binary "$1/kube-apiserver" --kube-controller-manager-binary "$1/kube-controller-manager" \
    --kube-scheduler-binary "$1/kube-scheduler" --etcd-binary "$1/etcd" --kwok-controller-binary "$1/kwok" \
    --kubeconfig "" --wait 120s
}

# bare_nodes N TIMEOUT: N kwok nodes lab-node-0.. by one kubectl apply, then kubectl wait for
# Ready - the bare reference's way (needs bin and kubeconfig from bench_cluster).
bare_nodes() {
  local i
  for ((i = 0; i < $1; i++)); do
    printf -- '---\napiVersion: v1\nkind: Node\nmetadata: {name: lab-node-%d, annotations: {kwok.x-k8s.io/node: fake}, labels: {gpu-incident-lab/node: "true"}}\nstatus: {capacity: {cpu: "8", memory: 32Gi, pods: "110"}, allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}\n' "$i"
  done | "$bin/kubectl" --kubeconfig "$kubeconfig" apply -f -
  "$bin/kubectl" --kubeconfig "$kubeconfig" wait --for=condition=Ready node -l gpu-incident-lab/node=true --timeout="$2"
}
