#!/usr/bin/env bash
# NVIDIA's nvidia-mig-parted on lab-node-1, as k8s-mig-manager runs it in its privileged Pod: a
# mount namespace of its own inside the node's, where the mock's GPUs have the files mig-parted
# reads beside NVML (PCI sysfs, /proc/modules with an nvidia line, /proc/driver/nvidia-caps) -
# nvml_mock/gpu_view.sh puts them there, nothing outside this namespace changes.
#
#   mig-parted.sh GPU_VIEW WORKDIR MIG_PARTED ARGS...   (run by real-node.sh exec: the node's PATH,
#                                                        its /usr with the driver's library)
set -euo pipefail
view=${1:?usage: mig-parted.sh GPU_VIEW WORKDIR MIG_PARTED ARGS...}
work=${2:?workdir}
shift 2
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu
# shellcheck disable=SC2016  # expanded by the inner bash, in the new namespace
exec unshare --mount --propagation private bash -c 'bash "$0" "$1" > /dev/null && shift && exec "$@"' "$view" "$work" "$@"
