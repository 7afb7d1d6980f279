#!/usr/bin/env bash
# What `make lab` and `make test` need on the host, set up before anything else runs.
#
#   toolchain/host-setup.sh lab|test
#
# Reads the one list, toolchain/host-packages (`test` also takes `lab`'s lines: make test runs
# the lab's builds too), checks each line the way its `check` column says, and installs what is
# missing with apt-get, one line saying what and why. Without root (and no password-less sudo),
# or when apt-get fails, it stops before anything was done, naming the missing packages and the
# one command that installs them. Go is a prerequisite it checks but cannot install (Debian 12's
# golang is 1.19; the pinned modules need the go.mod's version).
#
# Settings (for tests and other machines): PYTHON (the python that makes .venv, default python3),
# HOST_PACKAGES (the list), HOST_SETUP_SYSTEM_PYTHON (default /usr/bin/python3),
# HOST_SETUP_GO_MIN (default 1.26).
set -euo pipefail
stage=${1:?usage: host-setup.sh lab|test}
case "$stage" in lab|test) ;; *) echo "host-setup.sh: stage must be lab or test, not '$stage'" >&2; exit 2 ;; esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
list=${HOST_PACKAGES:-$here/host-packages}
python=${PYTHON:-python3}
system_python=${HOST_SETUP_SYSTEM_PYTHON:-/usr/bin/python3}
go_min=${HOST_SETUP_GO_MIN:-1.26}
who="make $stage"

[ -r "$list" ] || { echo "$who: the package list $list is missing" >&2; exit 1; }

# Prerequisites apt-get does not give (README: what a machine must have before the two commands)
problems=()
if ! command -v go >/dev/null 2>&1; then
  problems+=("Go $go_min+ is not on PATH (https://go.dev/dl/; Debian 12's golang package is too old)")
else
  have=$(go env GOVERSION 2>/dev/null | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')
  if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$go_min" "$have" | sort -V | head -1)" != "$go_min" ]; then
    problems+=("Go $go_min+ is needed, $(command -v go) is ${have:-of unknown version} (https://go.dev/dl/)")
  fi
fi
command -v "$python" >/dev/null 2>&1 || problems+=("$python (PYTHON) is not on PATH: Python 3.11 is needed")
command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 ||
  problems+=("apt-get and dpkg-deb are needed (Debian or a Debian-like system): Debian's containerd is unpacked from its package")
if [ ${#problems[@]} -gt 0 ]; then
  printf '%s: cannot start, nothing was done:\n' "$who" >&2
  printf '  - %s\n' "${problems[@]}" >&2
  exit 1
fi

present() { # CHECK -> status 0 when the machine has it
  local kind=${1%%:*} what=${1#*:}
  case "$kind" in
    cmd) local name; for name in ${what//,/ }; do command -v "$name" >/dev/null 2>&1 || return 1; done ;;
    path) [ -x "$what" ] ;;
    py) "$python" -c "import $what" >/dev/null 2>&1 ;;
    syspy) [ -x "$system_python" ] && "$system_python" -c "import $what" >/dev/null 2>&1 ;;
    *) echo "$who: $list: unknown check '$1' (cmd:, path:, py:, syspy:)" >&2; exit 2 ;;
  esac
}

missing_checks=() packages=() reasons=()
while read -r line_stage check pkgs why; do
  case "$line_stage" in ''|'#'*) continue ;; esac
  [ "$line_stage" = lab ] || [ "$stage" = test ] || continue
  present "$check" && continue
  pkgs=${pkgs//,/ }
  missing_checks+=("$check")
  for p in $pkgs; do
    case " ${packages[*]:-} " in *" $p "*) ;; *) packages+=("$p") ;; esac
  done
  reasons+=("$pkgs ($why)")
done < "$list"

if [ ${#missing_checks[@]} -eq 0 ]; then
  echo "$who: the host has what it needs ($(basename "$list"): nothing to install)"
  exit 0
fi

command_line="sudo apt-get install -y ${packages[*]}"
refuse() {
  printf '%s: %s; nothing was done. Missing:\n' "$who" "$1" >&2
  printf '  - %s\n' "${reasons[@]}" >&2
  printf 'Install them with:\n  %s\nthen run %s again.\n' "$command_line" "$who" >&2
  exit 1
}
if [ "$(id -u)" -eq 0 ]; then
  apt=(apt-get)
elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
  apt=(sudo -n apt-get)
else
  refuse "Debian packages are missing and installing them needs root (or password-less sudo)"
fi

echo "$who: installing with apt-get (needed, not found on this machine):"
printf '  - %s\n' "${reasons[@]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp "${TMPDIR:-/tmp}/host-setup-apt.XXXXXX.log")
if ! "${apt[@]}" install -y -qq "${packages[@]}" </dev/null >"$log" 2>&1; then
  echo "$who: apt-get install failed; updating the package lists and trying again"
  if ! { "${apt[@]}" update -qq && "${apt[@]}" install -y -qq "${packages[@]}"; } </dev/null >>"$log" 2>&1; then
    tail -n 15 "$log" >&2
    refuse "apt-get could not install them (its last words above; all of them in $log)"
  fi
fi
rm -f "$log"
still=()
for check in "${missing_checks[@]}"; do present "$check" || still+=("$check"); done
[ ${#still[@]} -eq 0 ] || refuse "after apt-get, still missing: ${still[*]}"
echo "$who: installed ${packages[*]}"
