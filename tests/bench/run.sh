#!/bin/sh
# make bench: the cycle benchmark (see tests/bench/bench_cycle.c).
set -eu
cd "$(dirname "$0")/../.."
exec build/bench/bench_cycle --numaorchd build/numaorchd "$@"
