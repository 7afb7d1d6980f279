#!/bin/sh
# judge by what containerd loads
containerd config dump | grep -q 'containerd.runtimes.nvidia'
