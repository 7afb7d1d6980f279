#!/bin/sh
# sums.sh DIR NAME... -> one line per NAME: "NAME SHA256", or "NAME missing" (not there or not
# executable). Only reads.
set -u
dir=$1
shift
for name in "$@"; do
  if [ -x "$dir/$name" ] && [ -f "$dir/$name" ]; then
    echo "$name $(sha256sum "$dir/$name" | cut -d' ' -f1)"
  else
    echo "$name missing"
  fi
done
