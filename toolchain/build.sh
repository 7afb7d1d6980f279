#!/usr/bin/env bash
# Build the control-plane binaries from the pinned Go modules in this folder.
#
#   toolchain/build.sh COMPONENT OUTDIR     build one binary into OUTDIR
#   toolchain/build.sh status OUTDIR        one line per component:
#                                           NAME PINNED-VERSION ok|missing|stale
#
# COMPONENT: kube-apiserver kube-controller-manager kube-scheduler kubectl
#            etcd kwok kwokctl kubelet crictl   (the last two: the real node)
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
component=${1:?usage: build.sh COMPONENT|status OUTDIR}
outdir=${2:?usage: build.sh COMPONENT|status OUTDIR}

modver() { # module-dir module-path -> version pinned in that go.mod
  awk -v m="$2" '$1 == m || ($1 == "require" && $2 == m) { print ($1 == m ? $2 : $3); exit }' "$here/$1/go.mod"
}

pinned() { # component -> the version its --version must print
  case "$1" in
    kube-*|kubectl|kubelet) modver kubernetes k8s.io/kubernetes ;;
    crictl) modver cri-tools sigs.k8s.io/cri-tools ;;
    etcd) v=$(modver etcd go.etcd.io/etcd/server/v3); echo "${v#v}" ;;
    kwok|kwokctl) modver kwok sigs.k8s.io/kwok ;;
  esac
}

reported() { # component binary -> the first line of its version output
  local out
  case "$1" in
    kubectl) out=$("$2" version --client 2>/dev/null) || true ;;
    *) out=$("$2" --version 2>/dev/null) || true ;;
  esac
  printf '%s\n' "${out%%$'\n'*}"
}

if [ "$component" = status ]; then
  # Asking seven binaries for --version costs about half a second; a binary whose size and
  # mtime are those recorded when it last reported its pinned version is not asked again.
  verified="$outdir/.verified"
  declare -A seen=()
  if [ -r "$verified" ]; then
    while read -r name stamp; do seen[$name]=$stamp; done < "$verified"
  fi
  fresh=""
  for c in $components; do
    want=$(pinned "$c")
    if [ ! -x "$outdir/$c" ]; then state=missing
    else
      stamp="$want $(stat -L -c '%s %Y' "$outdir/$c")"
      if [ "${seen[$c]:-}" = "$stamp" ]; then state=ok
      elif [[ " $(reported "$c" "$outdir/$c") " == *[\ v]"${want#v}"\ * ]]; then state=ok
      else state=stale
      fi
      [ "$state" = ok ] && fresh+="$c $stamp"$'\n'
    fi
    echo "$c $want $state"
  done
  # BUILD_STATUS_READ_ONLY (check mode): report only, do not remember verified binaries
  if [ -z "${BUILD_STATUS_READ_ONLY:-}" ] && [ -d "$outdir" ] && [ -w "$outdir" ] \
      && [ "$fresh" != "$(cat "$verified" 2>/dev/null)"$'\n' ]; then
    printf '%s' "$fresh" > "$verified.tmp" && mv -f "$verified.tmp" "$verified"
  fi
  exit 0
fi

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
  *)
    echo "build.sh: unknown component '$component'" >&2
    echo "known: $components" >&2
    exit 2
    ;;
esac

[ -n "$version" ] || { echo "build.sh: no version pinned for $component in $here/$moddir/go.mod" >&2; exit 2; }
mkdir -p "$outdir"
tmp="$outdir/.$component.building.$$"
trap 'rm -f "$tmp"' EXIT
echo "build.sh: building $component $version from $pkg" >&2
cd "$here/$moddir"
CGO_ENABLED=0 go build -mod=readonly -trimpath ${tags:+-tags "$tags"} \
  -ldflags "-s -w $ldflags" -o "$tmp" "$pkg"
mv -f "$tmp" "$outdir/$component"
trap - EXIT
echo "build.sh: built $outdir/$component" >&2
