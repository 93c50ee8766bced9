#!/bin/sh
# test_vm_mover.sh's case 8 alone (a <hugepages/> domain): numavm.py
# script test_vm_hugepages --libvirt.
VM_CASES=hugepages
. /tests/test_vm_mover.sh
