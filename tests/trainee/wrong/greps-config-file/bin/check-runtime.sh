#!/bin/sh
grep -q "runtimes.nvidia" /etc/containerd/config.toml
