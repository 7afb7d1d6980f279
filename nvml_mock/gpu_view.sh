#!/usr/bin/env bash
# The sysfs and procfs pieces NVIDIA's tools read about the GPUs, made for the mock's GPUs in
# the CALLER'S OWN mount namespace (run it as root inside `unshare --mount --propagation
# private`, as the real node's holder does; nothing outside that namespace changes):
#
#   /sys/bus/pci/devices/<bus ID>/  vendor 0x10de, device, class 0x030200 (3D controller),
#                                   numa_node, resource, config (256 bytes) - what go-nvlib's
#                                   nvpci reads (v0.7.1 pkg/nvpci/nvpci.go getGPUByPciBusID), for
#                                   mig-parted's GPU list and config selection by device ID
#   /proc/modules                   a line naming the nvidia module: mig-parted uses NVML and
#                                   `nvidia-smi -r` only then (cmd/nvidia-mig-parted/util/nvml.go
#                                   IsNvidiaModuleLoaded). A kernel without modules has no
#                                   /proc/modules at all: then /proc becomes a tmpfs linking
#                                   every entry of a second procfs mount, plus that file.
#   /proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<G>[/ci<C>]/access and /proc/devices
#                                   (WORKDIR/devices) - what NVIDIA's DRA driver reads for a
#                                   claimed MIG device (below)
#   /proc/driver/nvidia-caps/mig-minors
#                                   the MIG capability minors, laid out as the MIG user guide's
#                                   example (config 1, monitor 2, gpu0/gi0/access 3,
#                                   gpu0/gi0/ci0/access 4 ...: 9 per GPU instance, 135 per GPU):
#                                   the device plugin gives each MIG device its paths from it
#                                   (v0.19.3 internal/mig/mig-dp.go, internal/rm/nvml_devices.go)
#
#   gpu_view.sh WORKDIR     (the mock's nvidia-smi on PATH, its library and configuration found
#                            as the reader finds them: LD_LIBRARY_PATH, NVML_MOCK_CONFIG)
#   gpu_view.sh --files WORKDIR
#                           only the files, under WORKDIR/pci, WORKDIR/driver, WORKDIR/modules,
#                           mounted nowhere (the real node keeps them for its Pods: a container
#                           gets a procfs and sysfs of its own, docs/gpu-stack.md); a rerun
#                           rewrites them for the GPUs the mock reports now
# The PCI folder replaces the host's in this view: NVIDIA's tools see the mock's GPUs only.
set -euo pipefail
files_only=false
if [ "${1:-}" = --files ]; then files_only=true; shift; fi
work=${1:?usage: gpu_view.sh [--files] WORKDIR}
mkdir -p "$work/pci" "$work/proc"
lines=$(nvidia-smi --query-gpu=pci.bus_id,pci.device_id --format=csv,noheader) \
  || { echo "gpu_view.sh: the mock's nvidia-smi failed: $lines" >&2; exit 1; }
# a GPU the mock no longer reports (a smaller count) goes from the folder
find "$work/pci" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
while IFS=', ' read -r bus id; do
  dir=$work/pci/$(echo "${bus#0000}" | tr 'A-F' 'a-f')  # 00000000:07:00.0 -> 0000:07:00.0
  mkdir -p "$dir"
  echo 0x10de > "$dir/vendor"
  printf '0x%s\n' "$(echo "${id:2:4}" | tr 'A-F' 'a-f')" > "$dir/device"
  echo 0x030200 > "$dir/class"
  echo 0 > "$dir/numa_node"
  echo "0x0000000000000000 0x0000000000000000 0x0000000000000000" > "$dir/resource"
  head -c 256 /dev/zero > "$dir/config"
done <<< "$lines"
mkdir -p "$work/driver/nvidia-caps"
{
  echo "config 1"
  echo "monitor 2"
  for ((g = 0; g < $(wc -l <<< "$lines"); g++)); do
    for ((gi = 0; gi < 15; gi++)); do
      base=$((3 + g * 135 + gi * 9))
      echo "gpu$g/gi$gi/access $base"
      for ((ci = 0; ci < 8; ci++)); do echo "gpu$g/gi$gi/ci$ci/access $((base + 1 + ci))"; done
    done
  done
} > "$work/driver/nvidia-caps/mig-minors.tmp"
mv -f "$work/driver/nvidia-caps/mig-minors.tmp" "$work/driver/nvidia-caps/mig-minors"
# /proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<G>/access and .../ci<C>/access of the
# instances that exist now (nvidia-smi mig -lci), as the driver writes them (the MIG user guide,
# "Device Nodes and Capabilities": DeviceFileMinor - the mig-minors number above -, DeviceFileMode,
# DeviceFileModify): NVIDIA's DRA driver reads them for a claimed MIG device's CDI device nodes
caps=$work/driver/nvidia/capabilities
rm -rf "$caps.tmp" && mkdir -p "$caps.tmp"
cis=$(nvidia-smi mig -lci 2>/dev/null | awk -F'|' 'NF == 3 && $2 ~ /^ +[0-9]+ +[0-9]+ +MIG / {print $2}') || true
while read -r g gi _mig _name _profile ci _place; do
  [ -n "$g" ] || continue
  base=$((3 + g * 135 + gi * 9))
  mkdir -p "$caps.tmp/gpu$g/mig/gi$gi/ci$ci"
  printf 'DeviceFileMinor: %s\nDeviceFileMode: 292\nDeviceFileModify: 1\n' "$base" > "$caps.tmp/gpu$g/mig/gi$gi/access"
  printf 'DeviceFileMinor: %s\nDeviceFileMode: 292\nDeviceFileModify: 1\n' "$((base + 1 + ci))" > "$caps.tmp/gpu$g/mig/gi$gi/ci$ci/access"
done <<< "$cis"
rm -rf "$caps" && mv "$caps.tmp" "$caps"
# /proc/devices with the driver's character devices (their majors are dynamic on a host; these
# are the lab's: nvidia-caps 508, nvidia-uvm 510 - gpu_cdi_spec.py, real-node.sh GPU_UVM_MAJOR):
# NVIDIA's DRA driver finds nvidia-caps' major there (ALT_PROC_DEVICES_PATH, the chart's altProcDevices)
awk -v caps="${NVIDIA_CAPS_MAJOR:-508}" -v uvm="${NVIDIA_UVM_MAJOR:-510}" '
  /^Character devices:/ { print; inchar = 1; next }
  inchar && /^$/ { printf "195 nvidia-frontend\n%3d nvidia-caps\n%3d nvidia-uvm\n", caps, uvm; inchar = 0 }
  { print }' /proc/devices > "$work/devices.tmp"
mv -f "$work/devices.tmp" "$work/devices"
module="nvidia 56823808 0 - Live 0x0000000000000000 (POE)"
{ grep -v '^nvidia ' /proc/modules 2>/dev/null || true; echo "$module"; } > "$work/modules"
if $files_only; then exit 0; fi
mount --bind "$work/pci" /sys/bus/pci/devices
if [ -e /proc/modules ]; then
  mount --bind "$work/modules" /proc/modules
  [ ! -d /proc/driver ] || mount --bind "$work/driver" /proc/driver
else
  mount -t proc proc "$work/proc"
  mount -t tmpfs -o mode=0555 tmpfs /proc
  # one ln for every entry (a process each was ~300 of them per mig-parted run: bench/README.md)
  entries=()
  for entry in "$work"/proc/*; do [ "${entry##*/}" = driver ] || entries+=("$entry"); done
  ln -s "${entries[@]}" /proc/
  cp -a "$work/driver" /proc/driver
  echo "$module" > /proc/modules
fi
