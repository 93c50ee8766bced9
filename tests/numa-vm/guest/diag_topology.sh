#!/bin/sh
# Diagnostics: what the VM looks like (numactl -H, cgroup v2 controllers).
#   tests/numa-vm/numavm.py script diag_topology --vm vm8nodes
numactl -H
cat /sys/fs/cgroup/cgroup.subtree_control
echo "END rc=0"
