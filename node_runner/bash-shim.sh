#!/bin/sh
# /bin/bash of the lab's stand-in for nvidia/cuda:12.4.1-base-ubuntu22.04: busybox has no bash, and
# seed 003's capability Pod runs `bash -lc nvidia-smi`. Its sh runs the same command line.
exec /bin/sh "$@"
