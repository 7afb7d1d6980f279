#!/usr/bin/env bash
# Build the control-plane binaries from the pinned Go modules in this folder.
#
#   toolchain/build.sh COMPONENT OUTDIR     build one binary into OUTDIR
#   toolchain/build.sh status OUTDIR [COMPONENT...|gpu-stack]
#                                           one line per component:
#                                           NAME PINNED-VERSION ok|missing|stale
#                                           (without COMPONENT: the control plane and the
#                                           real node's, as always; gpu-stack: NVIDIA's four)
#
# COMPONENT: kube-apiserver kube-controller-manager kube-scheduler kubectl
#            etcd kwok kwokctl kubelet crictl   (the last two: the real node)
#            nvidia-device-plugin config-manager gpu-feature-discovery (toolchain/nvidia-device-plugin)
#            nvidia-container-runtime nvidia-ctk (toolchain/nvidia-container-toolkit)
#            - NVIDIA's GPU stack, built with cgo (go-nvml dlopens libnvidia-ml.so.1)
#            node-problem-detector (toolchain/node-problem-detector) - the sentinel on
#            lab-node-1 (issue 39); status checks it when named
#            nvidia-mig-parted (toolchain/mig-parted), nfd-master (toolchain/node-feature-discovery)
#            - MIG on lab-node-1 (issue 40): part of gpu-stack
#            nvidia-ctk-installer nvidia-cdi-hook nvidia-container-runtime-hook
#            nvidia-container-runtime.cdi nvidia-container-runtime.legacy (toolchain/nvidia-container-toolkit, v1.20.2),
#            nvidia-toolkit-v1.17.8 (toolchain/nvidia-container-toolkit-v1.17.8), nvidia-toolkit-v1.16.2
#            nvidia-toolkit-toolkit-v1.16.2 nvidia-toolkit-containerd-v1.16.2
#            (toolchain/nvidia-container-toolkit-v1.16.2) - NVIDIA's toolkit installers (issue 49):
#            the group `toolkit`, built when asked (playbooks/toolkit.yml, the tests), not by make lab
#            gpu-kubelet-plugin (toolchain/dra-driver-nvidia-gpu) - NVIDIA's DRA kubelet plugin for
#            GPUs on lab-node-2 (issue 48): the group `dra`, built when asked (playbooks/dra.yml), not
#            by make lab
#            containerd:V containerd-shim-runc-v2:V ctr:V - containerd V (a 2.x of versions.env:
#            CONTAINERD_2, CONTAINERD_24) from its pinned module, written as OUTDIR/containerd ...:
#            the Makefile's oracles (containerd only) and the real node's containerd 2.x
# The version comes from the module's go.mod (the single pin) and is stamped
# into the binary the way upstream's release build does, so `--version` tells
# the truth. The binary is written next to its final name and renamed into
# place, so an interrupted build never leaves a half-written binary behind.
# Reruns are cheap: Go's build cache holds every compiled package.
set -euo pipefail

# TOOLCHAIN_DIR: where the go.mod folders are, when this script runs from a copy
# (Ansible's script action runs a copy in a temporary folder).
here=${TOOLCHAIN_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
components="kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl kubelet crictl"
gpu_components="nvidia-device-plugin config-manager gpu-feature-discovery nvidia-container-runtime nvidia-ctk nvidia-mig-parted nfd-master"
sentinel_components="node-problem-detector"
dra_components="gpu-kubelet-plugin nvidia-cdi-hook"
toolkit_components="nvidia-ctk-installer nvidia-cdi-hook nvidia-container-runtime-hook nvidia-container-runtime.cdi nvidia-container-runtime.legacy nvidia-toolkit-v1.17.8 nvidia-toolkit-v1.16.2 nvidia-toolkit-toolkit-v1.16.2 nvidia-toolkit-containerd-v1.16.2"
component=${1:?usage: build.sh COMPONENT|status OUTDIR}
outdir=${2:?usage: build.sh COMPONENT|status OUTDIR}
case "$component" in
  containerd:*|containerd-shim-runc-v2:*|ctr:*)
    # containerd 2.x: the module folder versions.env names for the version (its go.mod is the pin)
    want=${component#*:}; component=${component%%:*}
    # shellcheck disable=SC1091
    source "$here/versions.env"
    case "$want" in
      "$CONTAINERD_2") moddir=$CONTAINERD_2_MODULE_DIR ;;
      "$CONTAINERD_24") moddir=$CONTAINERD_24_MODULE_DIR ;;
      *) echo "build.sh: containerd $want is not one of toolchain/versions.env ($CONTAINERD_2, $CONTAINERD_24)" >&2; exit 2 ;;
    esac
    ;;
esac
if [ "$component" = status ] && [ $# -gt 2 ]; then # status of the components named
  checked=""
  for c in "${@:3}"; do
    case " $components $gpu_components $sentinel_components $toolkit_components $dra_components gpu-stack toolkit dra " in
      *" $c "*) ;;
      *) echo "build.sh: unknown component '$c'" >&2; exit 2 ;;
    esac
    case "$c" in
      gpu-stack) checked+=" $gpu_components" ;;
      toolkit) checked+=" $toolkit_components" ;;
      dra) checked+=" $dra_components" ;;
      *) checked+=" $c" ;;
    esac
  done
else
  checked=$components
fi

modver() { # module-dir module-path -> version pinned in that go.mod
  awk -v m="$2" '$1 == m || ($1 == "require" && $2 == m) { print ($1 == m ? $2 : $3); exit }' "$here/$1/go.mod"
}

pinned() { # component -> the version its --version must print
  case "$1" in
    kube-*|kubectl|kubelet) modver kubernetes k8s.io/kubernetes ;;
    crictl) modver cri-tools sigs.k8s.io/cri-tools ;;
    etcd) v=$(modver etcd go.etcd.io/etcd/server/v3); echo "${v#v}" ;;
    kwok|kwokctl) modver kwok sigs.k8s.io/kwok ;;
    nvidia-device-plugin|config-manager|gpu-feature-discovery) modver nvidia-device-plugin github.com/NVIDIA/k8s-device-plugin ;;
    nfd-master) modver node-feature-discovery sigs.k8s.io/node-feature-discovery ;;
    gpu-kubelet-plugin) modver dra-driver-nvidia-gpu sigs.k8s.io/dra-driver-nvidia-gpu ;;
    nvidia-container-runtime|nvidia-ctk|nvidia-ctk-installer|nvidia-cdi-hook|nvidia-container-runtime-hook|nvidia-container-runtime.*) modver nvidia-container-toolkit github.com/NVIDIA/nvidia-container-toolkit ;;
    nvidia-toolkit-v*|nvidia-toolkit-*-v*) modver "nvidia-container-toolkit-${1##*-}" github.com/NVIDIA/nvidia-container-toolkit ;;
    nvidia-mig-parted) modver mig-parted github.com/NVIDIA/mig-parted ;;
    node-problem-detector) modver node-problem-detector k8s.io/node-problem-detector ;;
  esac
}

reported() { # component binary -> the first line of its version output
  local out
  case "$1" in
    kubectl) out=$("$2" version --client 2>/dev/null) || true ;;
    # upstream's config-manager has no --version: the module version Go recorded in the binary
    config-manager) out=$(go version -m "$2" 2>/dev/null | awk '$2 == "github.com/NVIDIA/k8s-device-plugin" { print $1, $2, $3 }') || true ;;
    # v1.16.2's `toolkit` prints a version of its own (0.1.0): the module version Go recorded
    nvidia-toolkit-toolkit-v*) out=$(go version -m "$2" 2>/dev/null | awk '$2 == "github.com/NVIDIA/nvidia-container-toolkit" { print $1, $2, $3 }') || true ;;
    *) out=$("$2" --version 2>/dev/null) || true ;;
  esac
  printf '%s\n' "${out%%$'\n'*}"
}

if [ "$component" = status ]; then
  # Asking seven binaries for --version costs about half a second; a binary whose size and
  # mtime are those recorded when it last reported its pinned version is not asked again.
  verified="$outdir/.verified"
  declare -A seen=() state_of=() stamp_of=()
  if [ -r "$verified" ]; then
    while read -r name stamp; do seen[$name]=$stamp; done < "$verified"
  fi
  for c in $checked; do
    want=$(pinned "$c")
    if [ ! -x "$outdir/$c" ]; then state=missing
    else
      stamp="$want $(stat -L -c '%s %Y' "$outdir/$c")"
      if [ "${seen[$c]:-}" = "$stamp" ]; then state=ok
      elif [[ " $(reported "$c" "$outdir/$c") " == *[\ v]"${want#v}"\ * ]]; then state=ok
      else state=stale
      fi
      [ "$state" = ok ] && stamp_of[$c]=$stamp
    fi
    state_of[$c]=$state
    echo "$c $want $state"
  done
  # remembered: the components checked now that are ok, and the others as they were remembered,
  # in one fixed order (a status of the control plane alone writes what it always wrote)
  fresh=""
  for c in $components $gpu_components $sentinel_components $toolkit_components gpu-kubelet-plugin; do
    if [ -n "${state_of[$c]:-}" ]; then
      [ -n "${stamp_of[$c]:-}" ] && fresh+="$c ${stamp_of[$c]}"$'\n'
    elif [ -n "${seen[$c]:-}" ]; then
      fresh+="$c ${seen[$c]}"$'\n'
    fi
  done
  # BUILD_STATUS_READ_ONLY (check mode): report only, do not remember verified binaries
  if [ -z "${BUILD_STATUS_READ_ONLY:-}" ] && [ -d "$outdir" ] && [ -w "$outdir" ] \
      && [ "$fresh" != "$(cat "$verified" 2>/dev/null)"$'\n' ]; then
    printf '%s' "$fresh" > "$verified.tmp" && mv -f "$verified.tmp" "$verified"
  fi
  exit 0
fi

cgo=0
case "$component" in
  kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet)
    moddir=kubernetes
    version=$(modver kubernetes k8s.io/kubernetes)
    pkg=k8s.io/kubernetes/cmd/$component
    minor=$(echo "$version" | cut -d. -f2)
    ldflags=""
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
      ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
    done
    tags=selinux,notest
    ;;
  etcd)
    moddir=etcd
    version=$(modver etcd go.etcd.io/etcd/server/v3)
    pkg=go.etcd.io/etcd/server/v3
    ldflags="-X go.etcd.io/etcd/api/v3/version.GitSHA=module-$version"
    tags=""
    ;;
  crictl)
    moddir=cri-tools
    version=$(modver cri-tools sigs.k8s.io/cri-tools)
    pkg=sigs.k8s.io/cri-tools/cmd/crictl
    ldflags="-X sigs.k8s.io/cri-tools/pkg/version.Version=$version"
    tags=""
    ;;
  kwok|kwokctl)
    moddir=kwok
    version=$(modver kwok sigs.k8s.io/kwok)
    kube=$(modver kubernetes k8s.io/kubernetes)
    pkg=sigs.k8s.io/kwok/cmd/$component
    ldflags="-X sigs.k8s.io/kwok/pkg/consts.Version=${version#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${kube#v}"
    tags=""
    ;;
  nvidia-device-plugin|config-manager|gpu-feature-discovery)
    # as upstream's Makefile (v0.19.3, cmd-%): -s -w, these extldflags (go-nvml's NVML symbols
    # stay unresolved until it dlopens libnvidia-ml.so.1), the version into internal/info;
    # gitCommit stays empty (a module zip has no git history)
    moddir=nvidia-device-plugin
    version=$(modver nvidia-device-plugin github.com/NVIDIA/k8s-device-plugin)
    pkg=github.com/NVIDIA/k8s-device-plugin/cmd/$component
    extldflags="-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files"
    ldflags="'-extldflags=$extldflags' -X github.com/NVIDIA/k8s-device-plugin/internal/info.version=$version"
    tags=""
    cgo=1
    ;;
  nvidia-container-runtime|nvidia-ctk|nvidia-ctk-installer|nvidia-cdi-hook|nvidia-container-runtime-hook|nvidia-container-runtime.*|nvidia-toolkit-v*|nvidia-toolkit-*-v*)
    # as upstream's Makefile + versions.mk (v1.20.2, cmd-%): CLI_VERSION is LIB_VERSION without
    # the v (1.20.2), extldflags with -z lazy (never -z now: go-nvml resolves NVML lazily).
    # The installers of the seed's era (v1.17.8, v1.16.2) from their own module folders, the
    # program under tools/container/ their toolkit image ran (the same Makefile rule then)
    moddir=nvidia-container-toolkit
    pkg=github.com/NVIDIA/nvidia-container-toolkit/cmd/$component
    case "$component" in
      nvidia-toolkit-v*|nvidia-toolkit-*-v*)
        moddir=nvidia-container-toolkit-${component##*-}
        [ -f "$here/$moddir/go.mod" ] || { echo "build.sh: no module folder toolchain/$moddir for $component" >&2; exit 2; }
        program=${component%-v*}   # nvidia-toolkit, or nvidia-toolkit-PROGRAM for v1.16.2's others
        [ "$program" = nvidia-toolkit ] || program=${program#nvidia-toolkit-}
        pkg=github.com/NVIDIA/nvidia-container-toolkit/tools/container/$program
        ;;
    esac
    version=$(modver "$moddir" github.com/NVIDIA/nvidia-container-toolkit)
    # tools/container's programs print main.Version ("development" unless set at build time)
    case "$component" in nvidia-toolkit-v*|nvidia-toolkit-*-v*) main_version="-X main.Version=${version#v}" ;; *) main_version="" ;; esac
    extldflags="-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files -Wl,-z,lazy"
    ldflags="'-extldflags=$extldflags' -X github.com/NVIDIA/nvidia-container-toolkit/internal/info.version=${version#v} $main_version"
    tags=""
    cgo=1
    ;;
  gpu-kubelet-plugin)
    # as upstream's Makefile (v0.4.1, cmd-%): cgo (go-nvml dlopens libnvidia-ml.so.1, its symbols
    # left unresolved), -s -w, the version into internal/info (gitCommit empty: a module zip has
    # no git history). k8s.io/kubernetes and its staging modules are the lab's release, not the
    # driver's v1.36.0-rc.0 (toolchain/dra-driver-nvidia-gpu/go.mod)
    moddir=dra-driver-nvidia-gpu
    version=$(modver dra-driver-nvidia-gpu sigs.k8s.io/dra-driver-nvidia-gpu)
    pkg=sigs.k8s.io/dra-driver-nvidia-gpu/cmd/$component
    extldflags="-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files"
    ldflags="'-extldflags=$extldflags' -X sigs.k8s.io/dra-driver-nvidia-gpu/internal/info.version=$version"
    tags=""
    cgo=1
    ;;
  nvidia-mig-parted)
    # as upstream's Makefile (v0.12.1, cmd-%): -extldflags=-Wl,-z,lazy -s -w, the version into
    # internal/info; go-nvml's cgo leaves NVML unresolved until it dlopens libnvidia-ml.so.1.
    # The proxy refuses v0.12.1's .info/.mod (403) but serves its zip: modproxy.py makes a
    # file:// proxy of that zip, checked by go against go.sum (the checksum database's hashes)
    moddir=mig-parted
    version=$(modver mig-parted github.com/NVIDIA/mig-parted)
    pkg=github.com/NVIDIA/mig-parted/cmd/$component
    ldflags="-extldflags=-Wl,-z,lazy -X github.com/NVIDIA/mig-parted/internal/info.version=$version"
    tags=""
    cgo=1
    zip_only="github.com/NVIDIA/mig-parted@$version"
    ;;
  containerd|containerd-shim-runc-v2|ctr)
    # as the Makefile's oracles were built: CGO off, without the btrfs, devmapper and zfs
    # snapshotters (their cgo); containerd's version is its module's (version.go: "2.2.0+unknown")
    version=v$want
    [ "$(modver "$moddir" github.com/containerd/containerd/v2)" = "$version" ] ||
      { echo "build.sh: toolchain/$moddir/go.mod does not pin containerd $want" >&2; exit 2; }
    pkg=github.com/containerd/containerd/v2/cmd/$component
    ldflags=""
    tags=no_btrfs,no_devmapper,no_zfs
    ;;
  nfd-master)
    # as upstream's Makefile (v0.18.3, build): CGO off, the version into pkg/version
    # (upstream: git describe; here the pinned tag)
    moddir=node-feature-discovery
    version=$(modver node-feature-discovery sigs.k8s.io/node-feature-discovery)
    pkg=sigs.k8s.io/node-feature-discovery/cmd/nfd-master
    ldflags="-X sigs.k8s.io/node-feature-discovery/pkg/version.version=$version"
    tags=""
    ;;
  node-problem-detector)
    # as upstream's Makefile (v1.34.0, ./bin/node-problem-detector): CGO off and no `journald`
    # tag (ENABLE_JOURNALD unset: the journald watcher needs cgo and is left out), the version
    # into pkg/version (upstream: git describe; here the pinned tag). Upstream's own BUILD_TAGS
    # (its README.md, section Build tags) leave out what the lab does not run: the Stackdriver
    # exporter (Google Cloud's clients) and the system stats monitor - a cold build 246 s instead
    # of 434 s (bench/README.md); the custom plugin monitor, the system log monitor and the k8s
    # exporter stay
    moddir=node-problem-detector
    version=$(modver node-problem-detector k8s.io/node-problem-detector)
    pkg=k8s.io/node-problem-detector/cmd/nodeproblemdetector
    ldflags="-X k8s.io/node-problem-detector/pkg/version.version=$version"
    tags=disable_stackdriver_exporter,disable_system_stats_monitor
    ;;
  *)
    echo "build.sh: unknown component '$component'" >&2
    echo "known: $components $gpu_components $sentinel_components $toolkit_components gpu-kubelet-plugin" >&2
    exit 2
    ;;
esac

[ -n "$version" ] || { echo "build.sh: no version pinned for $component in $here/$moddir/go.mod" >&2; exit 2; }
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)   # absolute: the build runs in the module folder
tmp="$outdir/.$component.building.$$"
trap 'rm -f "$tmp"' EXIT
echo "build.sh: building $component $version from $pkg" >&2
if [ -n "${zip_only:-}" ] && [ "$(go env GOPROXY)" != off ]; then
  python3 "$here/modproxy.py" "$outdir/.modproxy" "$zip_only"
  GOPROXY="file://$outdir/.modproxy,$(go env GOPROXY)"
  export GOPROXY
fi
cd "$here/$moddir"
CGO_ENABLED=${cgo:-0} go build -mod=readonly -trimpath ${tags:+-tags "$tags"} \
  -ldflags "-s -w $ldflags" -o "$tmp" "$pkg"
mv -f "$tmp" "$outdir/$component"
trap - EXIT
echo "build.sh: built $outdir/$component" >&2
