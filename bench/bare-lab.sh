#!/usr/bin/env bash
# The lab's work from no cluster to step 8, done by a bare script: kwokctl, kubectl, a
# heredoc per file, Python's tomllib for step 3 - no Ansible, no checks, no idempotence.
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

# environment: the control plane and three Ready nodes
bare_cluster "$bin" "$name" > /dev/null 2>&1
bare_nodes 3 120s > /dev/null

# steps 1-2: the two containerd files
mkdir -p "$root/etc/containerd/conf.d" "$root/out" "$root/bin" "$root/k8s"
cat > "$root/etc/containerd/config.toml" <<TOML
version = 2
imports = ["$root/etc/containerd/conf.d/*.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
TOML
cat > "$root/etc/containerd/conf.d/99-nvidia.toml" <<'TOML'
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    SystemdCgroup = true
TOML

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
install -m 0755 roles/runtime_check/files/check-runtime.sh "$root/bin/check-runtime.sh"

# step 5: RuntimeClass, GPU Pod, Pending
cat > "$root/k8s/runtimeclass.yaml" <<'YAML'
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: nvidia
handler: nvidia
YAML
cat > "$root/k8s/gpu-pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: cuda-probe
  namespace: gpu-lab
spec:
  runtimeClassName: nvidia
  restartPolicy: Never
  containers:
    - name: cuda
      image: nvidia/cuda:12.4.1-base-ubuntu22.04
      command: ["nvidia-smi"]
      resources:
        limits:
          nvidia.com/gpu: 1
YAML
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
cat > "$root/k8s/time-slicing.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: time-slicing-config
  namespace: gpu-operator
data:
  any: |-
    version: v1
    sharing:
      timeSlicing:
        failRequestsGreaterThanOne: true
        resources:
          - name: nvidia.com/gpu
            replicas: 5
YAML
k create namespace gpu-operator > /dev/null
k apply -f "$root/k8s/time-slicing.yaml" > /dev/null
gpus=4 replicas=5 vram=40
k patch node lab-node-1 --subresource=status --type=merge \
  -p "{\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"$((gpus * replicas))\"},\"allocatable\":{\"nvidia.com/gpu\":\"$((gpus * replicas))\"}}}" > /dev/null
printf 'PHYSICAL_GPUS=%s\nREPLICAS=%s\nADVERTISED=%s\nVRAM_PER_GPU_GIB=%s\nVRAM_GUARANTEED_PER_SLOT_GIB=0\nVRAM_SHARED_PER_GPU_GIB=%s\nISOLATION=none\n' \
  $gpus $replicas $((gpus * replicas)) $vram $vram > "$root/out/slots.txt"

# step 8: the toolkit DaemonSet, Ready everywhere, then the update that stalls
cat > "$root/k8s/toolkit-ds.yaml" <<'YAML'
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nvidia-container-toolkit
  namespace: gpu-operator
spec:
  selector:
    matchLabels:
      app: nvidia-container-toolkit
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
  template:
    metadata:
      labels:
        app: nvidia-container-toolkit
    spec:
      containers:
        - name: toolkit
          image: nvcr.io/nvidia/k8s/container-toolkit:v1.16.2
          resources:
            requests:
              memory: 128Mi
YAML
k apply -f "$root/k8s/toolkit-ds.yaml" > /dev/null
k -n gpu-operator rollout status ds/nvidia-container-toolkit --timeout=120s > /dev/null
k -n gpu-operator patch ds nvidia-container-toolkit --type=json -p '[
  {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nvcr.io/nvidia/k8s/container-toolkit:v1.17.0"},
  {"op": "replace", "path": "/spec/template/spec/containers/0/resources/requests/memory", "value": "64Gi"}]' > /dev/null
k -n gpu-operator wait ds/nvidia-container-toolkit --for=jsonpath='{.status.updatedNumberScheduled}'=1 --timeout=60s > /dev/null
k -n gpu-operator wait pod -l app=nvidia-container-toolkit --field-selector=status.phase=Pending \
  --for=condition=PodScheduled=False --timeout=60s > /dev/null
read -r desired updated ready <<< "$(k -n gpu-operator get ds nvidia-container-toolkit \
  -o jsonpath='{.status.desiredNumberScheduled} {.status.updatedNumberScheduled} {.status.numberReady}')"
blocker=$(k -n gpu-operator get pods -l app=nvidia-container-toolkit --field-selector=status.phase=Pending \
  -o jsonpath='{.items[*].status.conditions[?(@.type=="PodScheduled")].message}')
case "$blocker" in *"Insufficient memory"*) blocker=insufficient-memory ;; *) blocker=unknown ;; esac
printf 'DESIRED=%s\nUPDATED=%s\nREADY=%s\nOLD_IMAGE_PODS=%s\nMAX_UNAVAILABLE=1\nBLOCKER=%s\n' \
  "$desired" "$updated" "$ready" $((desired - updated)) "$blocker" > "$root/out/rollout.txt"
