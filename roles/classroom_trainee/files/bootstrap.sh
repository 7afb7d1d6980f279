#!/bin/sh
# A trainee host before any module runs (no Python needed to run this):
#   bootstrap.sh VENV_DIR PYYAML_VERSION install|read-only
# Finds a Python 3 that imports yaml (the lab's modules need PyYAML): the system's, or a venv
# of this user's. With "install" it creates that venv (pip install PyYAML==VERSION from PyPI)
# when the system Python has no yaml, and installs python3 (+venv) with apt-get when the host
# has none and the user is root or has password-less sudo. With "read-only" it changes nothing.
# Prints one JSON line: home, user, python, root (can become root), changed, error.
set -u
venv=$1
pyyaml=$2
mode=$3
# shellcheck disable=SC2088  # a literal "~/" as the inventory wrote it, expanded here
case $venv in "~/"*) venv=$HOME/${venv#"~/"} ;; esac
changed=false
error=""
python=""

if [ "$(id -u)" = 0 ]; then root=true; sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then root=true; sudo="sudo -n"
else root=false; sudo=""
fi

has_yaml() { "$1" -c 'import yaml, sys; sys.exit(0 if sys.version_info >= (3, 8) else 1)' >/dev/null 2>&1; }

system=$(command -v python3 2>/dev/null || true)
if [ -z "$system" ] && [ "$mode" = install ] && [ "$root" = true ] && command -v apt-get >/dev/null 2>&1; then
  if $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-yaml >/dev/null 2>&1 \
      || { $sudo apt-get update -qq >/dev/null 2>&1 \
           && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-yaml >/dev/null 2>&1; }; then
    changed=true
    system=$(command -v python3 2>/dev/null || true)
  fi
fi

if [ -z "$system" ]; then
  if [ "$root" = true ] && [ "$mode" = install ]; then why="apt-get could not install it"
  elif [ "$root" = true ]; then why="this run installs nothing"
  else why="and no root to install it"
  fi
  error="no python3 on this host ($why): install Debian's python3 and python3-yaml packages there, then run again"
elif has_yaml "$system"; then
  python=$system
elif [ -x "$venv/bin/python" ] && has_yaml "$venv/bin/python"; then
  python=$venv/bin/python
elif [ "$mode" != install ]; then
  error="$system has no PyYAML and there is no $venv yet: run playbooks/classroom.yml for this host first"
else
  log=${venv%/*}/bootstrap.log
  mkdir -p "${venv%/*}"
  if "$system" -m venv "$venv" >"$log" 2>&1 \
      && "$venv/bin/python" -m pip install --quiet "PyYAML==$pyyaml" >>"$log" 2>&1 \
      && has_yaml "$venv/bin/python"; then
    python=$venv/bin/python
    changed=true
  else
    # shellcheck disable=SC1003  # tr deletes quotes and backslashes (the message goes into JSON)
    error="could not make a Python venv with PyYAML in $venv (see $log; Debian needs python3-venv for 'python3 -m venv'): $(tail -n 1 "$log" 2>/dev/null | tr -d '"\\')"
  fi
fi

printf '{"home": "%s", "user": "%s", "python": "%s", "root": %s, "changed": %s, "error": "%s"}\n' \
  "$HOME" "$(id -un)" "$python" "$root" "$changed" "$error"
