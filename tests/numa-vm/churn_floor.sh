#!/bin/bash
# churn_floor.sh OUT [ROUNDS] [PLACERS...] — the churn scenario again and
# again (numavm.py run), each run's metrics and raw results kept in OUT
# (P.I.json, raw.P.I/), then churn_floor.py's table of them: how each
# late guest's t90 relates to how long its workload took to touch its
# memory (results/churn-floor/README.md). Run it under the testbed's
# lock (flock /tmp/numaorch-heavy.lock) with the build done.
set -eu
out=$1
rounds=${2:-3}
shift $(($# > 1 ? 2 : 1))
placers=${*:-numaorchd kernel none}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
	for p in $placers; do
		python3 "$here/numavm.py" run churn "$p" >"$out/$p.$i.json" 2>"$out/$p.$i.err"
		rm -rf "$out/raw.$p.$i"
		cp -r "$here/../../build/numa-vm/runs/churn.$p" "$out/raw.$p.$i"
	done
done
python3 "$here/churn_floor.py" "$out"
