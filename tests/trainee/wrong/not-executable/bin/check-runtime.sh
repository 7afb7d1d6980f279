#!/bin/sh
containerd config dump | grep -q "containerd.runtimes.nvidia"
