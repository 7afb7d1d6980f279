#!/bin/sh
/usr/bin/containerd config dump | grep -q "containerd.runtimes.nvidia"
