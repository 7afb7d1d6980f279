#!/usr/bin/env bash
# Build the lab's MOCK NVML library and its nvidia-smi reader (gcc; no Go build). README.md beside
# this script says what the mock imitates.
#
#   build.sh OUTDIR     -> OUTDIR/libnvidia-ml.so.1  the mock (shared, -fPIC, lazy binding)
#                          OUTDIR/nvidia-smi         the reader (static, the mock compiled in)
#                          OUTDIR/nvml-mock-cards.tsv the card table the mock reads by default
#   build.sh --driver-root ROOT
#                       -> the same laid out as a driver root: ROOT/usr/lib/x86_64-linux-gnu/
#                          {libnvidia-ml.so.1,nvml-mock-cards.tsv}, ROOT/usr/bin/nvidia-smi
#                          (the device plugin's --nvidia-driver-root; the mock's configuration
#                          goes beside the library: ROOT/usr/lib/x86_64-linux-gnu/nvml-mock.conf)
#
# Compiled against go-nvml's own nvml.h: the go-nvml version NVIDIA's device plugin pins
# (toolchain/nvidia-device-plugin/go.mod), found in Go's module cache (downloaded if absent),
# or GO_NVML_DIR (its pkg/nvml folder). Stubs for every nvml* function go-nvml references and
# the mock's sources lack are generated from that same source (gen_stubs.py). Never -z now: go-nvml
# opens the library RTLD_LAZY and looks up versioned names itself.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
toolchain=${TOOLCHAIN_DIR:-$here/../toolchain}
root=""
if [ "${1:-}" = --driver-root ]; then
  root=${2:?usage: build.sh --driver-root ROOT}
  outdir=$root/usr/lib/x86_64-linux-gnu
else
  outdir=${1:?usage: build.sh OUTDIR | --driver-root ROOT}
fi

nvml=${GO_NVML_DIR:-}
if [ -z "$nvml" ]; then
  version=$(awk '$1 == "github.com/NVIDIA/go-nvml" { print $2; exit }' "$toolchain/nvidia-device-plugin/go.mod")
  [ -n "$version" ] || { echo "nvml_mock/build.sh: no go-nvml in $toolchain/nvidia-device-plugin/go.mod" >&2; exit 2; }
  dir=$(cd "$toolchain/nvidia-device-plugin" && go mod download -json "github.com/NVIDIA/go-nvml@$version" \
        | awk -F'"' '$2 == "Dir" { print $4 }')
  nvml=$dir/pkg/nvml
fi
[ -r "$nvml/nvml.h" ] || { echo "nvml_mock/build.sh: no nvml.h in $nvml" >&2; exit 2; }

mkdir -p "$outdir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cflags=(-O2 -Wall -Wno-format-truncation -DNVML_NO_UNVERSIONED_FUNC_DEFS=1 -I"$nvml")
# the library, one object per concern (mock.h lists them); the reader adds its own two files
library=(config devices events mig mig_instances mig_state)
objects=() sources=()
for src in "${library[@]}"; do
  gcc "${cflags[@]}" -fPIC -fvisibility=hidden -c "$here/$src.c" -o "$work/$src.o"
  objects+=("$work/$src.o") sources+=("$here/$src.c")
done
nm -g --defined-only "${objects[@]}" | awk 'NF == 3 { print $3 }' > "$work/defined"
python3 "$here/gen_stubs.py" "$nvml" "$work/defined" > "$work/nvml_stubs.c"
gcc "${cflags[@]}" -fPIC -fvisibility=hidden -c "$work/nvml_stubs.c" -o "$work/nvml_stubs.o"
gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o "$work/libnvidia-ml.so.1" \
  "${objects[@]}" "$work/nvml_stubs.o" -lpthread
# static: the reader runs in a busybox image without a C library (dladdr's static-link warning
# is expected: the reader sets the library folder itself)
gcc "${cflags[@]}" -static -o "$work/nvidia-smi" "$here/nvidia_smi.c" "$here/smi_mig.c" \
  "${sources[@]}" -lpthread 2> "$work/static.log" || { cat "$work/static.log" >&2; exit 1; }
cp "$here/cards.tsv" "$work/nvml-mock-cards.tsv"
smi=$outdir
if [ -n "$root" ]; then
  smi=$root/usr/bin
  mkdir -p "$smi"
fi
for f in libnvidia-ml.so.1 nvml-mock-cards.tsv; do
  mv -f "$work/$f" "$outdir/$f"
done
mv -f "$work/nvidia-smi" "$smi/nvidia-smi"
echo "nvml_mock/build.sh: built $outdir/libnvidia-ml.so.1 and $smi/nvidia-smi over $nvml" >&2
