#!/usr/bin/env bash
# The reboot, again and again, as a trainee rehearses it (issue 47): N rounds of
#   ansible-playbook playbooks/reboot.yml -e reboot_force=true   (the node goes down, comes back)
#   ansible-playbook lab.yml                                     (back to the incident's end state)
# on a running lab - the default one unless ansible-playbook's options after N say otherwise.
#   bench/reboot-soak.sh N [OPTIONS...]            e.g. bench/reboot-soak.sh 30
#   SOAK_GPU_BUSY=1 bench/reboot-soak.sh 5         a Pod holds a GPU, the plugin restarts as it goes down
#   bench/reboot-soak.sh 5 -e lab_node_containerd=2.2.0
# A line per round (seconds of each play, its result, the load average), then a Markdown summary.
# A round that fails prints its play's last lines and the logs stay in SOAK_LOGS; the soak goes on
# (the next round's lab.yml is the way back) and exits 1 at the end when any round failed.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
rounds=${1:?usage: bench/reboot-soak.sh N [ansible-playbook options, e.g. -e lab_node_containerd=2.2.0]}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench/reboot-soak.sh: N is a number of rounds (1 or more), not '$rounds'" >&2; exit 2; }
shift
[ -x .venv/bin/ansible-playbook ] || { echo "bench/reboot-soak.sh: no .venv here - run make lab first" >&2; exit 2; }
# shellcheck disable=SC1091
source .venv/bin/activate
logs=${SOAK_LOGS:-/tmp/reboot-soak}
mkdir -p "$logs"
busy=${SOAK_GPU_BUSY:-0}
kubeconfig=$HOME/.kwok/clusters/${SOAK_CLUSTER:-gpu-incident-lab}/kubeconfig.yaml
kubectl() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }
[ -r "$kubeconfig" ] || { echo "bench/reboot-soak.sh: no running lab ($kubeconfig): make lab first (SOAK_CLUSTER names another)" >&2; exit 2; }

# a Pod that holds one of lab-node-1's GPUs (the device plugin's allocation) through the reboots
HOLDER='apiVersion: v1
kind: Pod
metadata: {name: soak-gpu-holder, namespace: gpu-lab}
spec:
  nodeSelector: {kubernetes.io/hostname: lab-node-1}
  terminationGracePeriodSeconds: 5
  containers:
    - name: hold
      image: gpu-incident-lab.local/busybox:1.35
      command: ["sh", "-c", "trap \"exit 0\" TERM; sleep 3600 & wait"]
      resources: {limits: {nvidia.com/gpu: 1}}'

load() { cut -d' ' -f1-3 /proc/loadavg; }
reboot_s=() lab_s=() failed=0 results=() rejected=0
echo "reboot soak: $rounds rounds of reboot.yml -e reboot_force=true then lab.yml ${*:+(options: $*)}; GPU busy: $([ "$busy" = 1 ] && echo yes || echo no); logs in $logs" >&2
echo "load average before: $(load); $(nproc) cores" >&2
# a holder an earlier soak left is not this soak's to count
if [ "$busy" = 1 ]; then kubectl -n gpu-lab delete pod soak-gpu-holder --ignore-not-found --wait=true > /dev/null; fi
for i in $(seq 1 "$rounds"); do
  result=ok
  if [ "$busy" = 1 ]; then
    # a GPU Pod the kubelet admits again at its start, before NVIDIA's plugin has registered, is
    # rejected for good (phase Failed, UnexpectedAdmissionError: "Allocate failed due to no healthy
    # devices present") - the kubelet's behaviour after a reboot, not the lab's: counted, and the
    # bare Pod made anew as a Deployment's ReplicaSet would
    why=$(kubectl -n gpu-lab get pod soak-gpu-holder -o 'jsonpath={.status.phase} {.status.reason}: {.status.message}' 2>/dev/null || true)
    if [ "${why%% *}" = Failed ]; then
      rejected=$((rejected + 1))
      echo "  the GPU holder Pod of the last round: ${why#Failed }" >&2
      kubectl -n gpu-lab delete pod soak-gpu-holder --wait=true > /dev/null
    fi
    kubectl apply -f - <<< "$HOLDER" > /dev/null
    kubectl -n gpu-lab wait --for=condition=Ready pod/soak-gpu-holder --timeout=120s > /dev/null ||
      result="the GPU holder Pod never ran: $(kubectl -n gpu-lab get pod soak-gpu-holder -o 'jsonpath={.status.phase} {.status.reason} {.status.message}' 2>&1)"
    # the plugin goes as the node goes down: its Pod deleted without waiting
    kubectl -n gpu-operator delete pod -l app.kubernetes.io/name=nvidia-device-plugin --wait=false > /dev/null
  fi
  t0=$(now)
  ansible-playbook playbooks/reboot.yml -e reboot_force=true "$@" > "$logs/round-$i.reboot.log" 2>&1 || result="reboot.yml failed"
  t1=$(now)
  ansible-playbook lab.yml "$@" > "$logs/round-$i.lab.log" 2>&1 || { [ "$result" != ok ] || result="lab.yml failed"; }
  t2=$(now)
  reboot_s+=("$(secs "$t0" "$t1")"); lab_s+=("$(secs "$t1" "$t2")")
  if [ "$result" != ok ]; then
    failed=$((failed + 1))
    for log in "$logs/round-$i.reboot.log" "$logs/round-$i.lab.log"; do
      grep -E 'fatal:|FAILED!|"msg":' "$log" | tail -5 | sed "s|^|    ${log##*/}: |" >&2 || true
    done
  fi
  results+=("$result")
  echo "round $i/$rounds: reboot.yml $(secs "$t0" "$t1") s, lab.yml $(secs "$t1" "$t2") s ($(changed_in "$logs/round-$i.lab.log")): $result; load $(load)" >&2
done
if [ "$busy" = 1 ]; then
  why=$(kubectl -n gpu-lab get pod soak-gpu-holder -o 'jsonpath={.status.phase}' 2>/dev/null || true)
  [ "$why" != Failed ] || rejected=$((rejected + 1))
  echo "the GPU holder Pod was rejected at the kubelet's start (UnexpectedAdmissionError) after $rejected of $rounds reboots" >&2
  kubectl -n gpu-lab delete pod soak-gpu-holder --ignore-not-found --wait=true > /dev/null
fi
# shellcheck disable=SC2086
{
  echo "| rounds | failed | reboot.yml, s | lab.yml after it, s | load average after | options |"
  echo "|---|---|---|---|---|---|"
  echo "| $rounds | $failed | $(spread "${reboot_s[@]}") | $(spread "${lab_s[@]}") | $(load) | ${*:-(default lab)}$([ "$busy" = 1 ] && echo ', GPU busy') |"
}
[ "$failed" = 0 ] || { echo "bench/reboot-soak.sh: $failed of $rounds rounds failed (logs in $logs)" >&2; exit 1; }
