#!/usr/bin/env bash
# The lab's work from no cluster to step 8, done by a bare script: kwokctl, kubectl, a
# trainee's answer per file (tests/trainee/correct, the grader's own corpus), Python's tomllib for
# step 3 - no Ansible, no checks, no idempotence.
# It is the reference the lab's own time is measured against (bench/lab-timings.sh):
#   bench/bare-lab.sh CLUSTER_NAME LAB_ROOT
# It leaves the same twelve files in LAB_ROOT as lab.yml --skip-tags guard, and the
# cluster with the same objects. Waits are kubectl wait / rollout status (watches), never
# sleeps. Needs the binaries the lab built (bench/lib.sh: bin).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_cluster "$1"
root=$2
k() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }
# a file the trainee hands in, from the one copy of the correct answers (@LAB@: the lab folder)
answers=tests/trainee/correct
answer() { mkdir -p "$(dirname "$root/$1")"; sed "s|@LAB@|$root|g" "$answers/$1" > "$root/$1"; chmod --reference="$answers/$1" "$root/$1"; }

# environment: the control plane and three Ready nodes
bare_cluster "$bin" "$name" > /dev/null 2>&1
bare_nodes 3 120s > /dev/null

# steps 1-2: the two containerd files
mkdir -p "$root/out"
answer etc/containerd/config.toml
answer etc/containerd/conf.d/99-nvidia.toml

# step 3: read both with tomllib, imports expanded
python3 - "$root" > "$root/out/merge.txt" <<'PY'
import glob, sys, tomllib
root = sys.argv[1]
main = tomllib.load(open(f"{root}/etc/containerd/config.toml", "rb"))
path = ["plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes"]
def runtimes(doc):
    for key in path:
        doc = doc.get(key, {})
    return sorted(doc)
drop = [r for pattern in main.get("imports", []) for f in sorted(glob.glob(pattern))
        for r in runtimes(tomllib.load(open(f, "rb")))]
print("MAIN_RUNTIMES=" + ",".join(runtimes(main)))
print("DROPIN_RUNTIMES=" + ",".join(drop))
print("CONFLICT=" + ("yes" if drop and runtimes(main) else "no"))
print('CONFLICT_TABLE=plugins."io.containerd.grpc.v1.cri".containerd.runtimes')
print("LOADED_RUNTIMES=runc")
PY

# step 4: the check script
answer bin/check-runtime.sh

# step 5: RuntimeClass, GPU Pod, Pending
answer k8s/runtimeclass.yaml
answer k8s/gpu-pod.yaml
k create namespace gpu-lab > /dev/null
# a Pod is refused until the namespace's default ServiceAccount exists
k -n gpu-lab wait --for=create serviceaccount/default --timeout=60s > /dev/null
k apply -f "$root/k8s/runtimeclass.yaml" -f "$root/k8s/gpu-pod.yaml" > /dev/null
k -n gpu-lab wait pod/cuda-probe --for=condition=PodScheduled=False --timeout=60s > /dev/null
k -n gpu-lab get pod cuda-probe \
  -o jsonpath='{range .status.conditions[?(@.type=="PodScheduled")]}{.reason}{"\n"}{.message}{"\n"}{end}' \
  > "$root/out/unscheduled.txt"

# step 6: the device plugin played through node status
k patch node lab-node-0 --subresource=status --type=merge \
  -p '{"status":{"capacity":{"nvidia.com/gpu":"4"},"allocatable":{"nvidia.com/gpu":"4"}}}' > /dev/null
k -n gpu-lab wait pod/cuda-probe --for=jsonpath='{.status.phase}'=Running --timeout=60s > /dev/null
k get nodes -l gpu-incident-lab/node=true -o 'custom-columns=NAME:.metadata.name,GPU:.status.allocatable.nvidia\.com/gpu' \
  > "$root/out/node-gpu.txt"

# step 7: time-slicing
answer k8s/time-slicing.yaml
k create namespace gpu-operator > /dev/null
k apply -f "$root/k8s/time-slicing.yaml" > /dev/null
gpus=4 replicas=5 vram=40
k patch node lab-node-1 --subresource=status --type=merge \
  -p "{\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"$((gpus * replicas))\"},\"allocatable\":{\"nvidia.com/gpu\":\"$((gpus * replicas))\"}}}" > /dev/null
printf 'PHYSICAL_GPUS=%s\nREPLICAS=%s\nADVERTISED=%s\nVRAM_PER_GPU_GIB=%s\nVRAM_GUARANTEED_PER_SLOT_GIB=0\nVRAM_SHARED_PER_GPU_GIB=%s\nISOLATION=none\n' \
  $gpus $replicas $((gpus * replicas)) $vram $vram > "$root/out/slots.txt"

# step 8: the toolkit DaemonSet, Ready everywhere, then the update that stalls
answer k8s/toolkit-ds.yaml
k apply -f "$root/k8s/toolkit-ds.yaml" > /dev/null
k -n gpu-operator rollout status ds/nvidia-container-toolkit --timeout=120s > /dev/null
k -n gpu-operator patch ds nvidia-container-toolkit --type=json -p '[
  {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nvcr.io/nvidia/k8s/container-toolkit:v1.17.0"},
  {"op": "replace", "path": "/spec/template/spec/containers/0/resources/requests/memory", "value": "64Gi"}]' > /dev/null
k -n gpu-operator wait ds/nvidia-container-toolkit --for=jsonpath='{.status.updatedNumberScheduled}'=1 --timeout=60s > /dev/null
k -n gpu-operator wait pod -l app=toolkit --field-selector=status.phase=Pending \
  --for=condition=PodScheduled=False --timeout=60s > /dev/null
read -r desired updated ready <<< "$(k -n gpu-operator get ds nvidia-container-toolkit \
  -o jsonpath='{.status.desiredNumberScheduled} {.status.updatedNumberScheduled} {.status.numberReady}')"
blocker=$(k -n gpu-operator get pods -l app=toolkit --field-selector=status.phase=Pending \
  -o jsonpath='{.items[*].status.conditions[?(@.type=="PodScheduled")].message}')
case "$blocker" in *"Insufficient memory"*) blocker=insufficient-memory ;; *) blocker=unknown ;; esac
printf 'DESIRED=%s\nUPDATED=%s\nREADY=%s\nOLD_IMAGE_PODS=%s\nMAX_UNAVAILABLE=1\nBLOCKER=%s\n' \
  "$desired" "$updated" "$ready" $((desired - updated)) "$blocker" > "$root/out/rollout.txt"
