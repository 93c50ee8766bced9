#!/bin/bash
# repeat.sh OUT SCENARIO [ROUNDS] [PLACERS...] — SCENARIO again and again
# (numavm.py run), the placers alternating within each round so that they
# meet the same host load; each run's metrics and raw results kept in OUT
# (P.I.json, raw.P.I/), then repeat.py's table of them. A placer may set
# config keys (numaorchd:policy.min_free_mib=64): an A/B of one setting.
# Run it under the testbed's lock (flock /tmp/numaorch-heavy.lock) with
# the build done.
set -eu
out=$1
scn=$2
rounds=${3:-3}
shift $(($# > 2 ? 3 : 2))
placers=${*:-numaorchd kernel none}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
	for p in $placers; do
		python3 "$here/numavm.py" run "$scn" "$p" >"$out/$p.$i.json" 2>"$out/$p.$i.err"
		rm -rf "$out/raw.$p.$i"
		cp -r "$here/../../build/numa-vm/runs/$scn.$p" "$out/raw.$p.$i"
	done
done
python3 "$here/repeat.py" "$out"
