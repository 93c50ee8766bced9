#!/bin/sh
# make bench-api: the REST API under load (see tests/bench/bench_api.py).
set -eu
cd "$(dirname "$0")/../.."
exec python3 tests/bench/bench_api.py "$@"
