#!/bin/sh
# make check-libvirt: numaorchd and its hook against a private libvirtd
# with real QEMU (see ../test_libvirt.py). Needs root; skips otherwise.
set -eu
cd "$(dirname "$0")/.."
NUMAORCH_LIBVIRT_TESTS=1 exec python3 -m unittest -v test_libvirt
