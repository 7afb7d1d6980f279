#!/bin/sh
# The mock's holders, kept by the container runtime: NVIDIA's runtime applies the CDI spec's hooks
# for each MIG device a container gets (roles/gpu_stack/files/gpu_cdi_spec.py) -
#   nvml-mock-hold hold MIG-<uuid>      createRuntime: the device is in use
#   nvml-mock-hold release MIG-<uuid>   poststop: the container is gone
# A driver knows which process uses a MIG instance and refuses to destroy it ("In use by another
# client"); the mock knows it from <mig_state>.held/<MIG UUID> (nvml_mock/README.md, Holders). Runs
# in the node's namespaces, beside the MIG state (this file's folder); OCI hooks get the
# container's state on stdin, read here for its id.
set -eu
held="$(dirname "$0")/nvml-mock-mig.state.held"
case "${1:-}" in
  hold)
    mkdir -p "$held"
    state=$(cat || true)
    id=$(printf '%s' "$state" | sed -n 's/.*"id" *: *"\([^"]*\)".*/\1/p')
    printf '%s\n' "${id:-unknown}" >> "$held/${2:?MIG UUID}"
    ;;
  release)
    cat > /dev/null || true
    rm -f "$held/${2:?MIG UUID}"
    ;;
  *) echo "usage: nvml-mock-hold hold|release MIG-UUID" >&2; exit 2 ;;
esac
