#!/bin/bash
# churn_floor.sh OUT [ROUNDS] [PLACERS...] — the churn scenario again and
# again (repeat.sh: P.I.json and raw.P.I/ in OUT), then churn_floor.py's
# table of them: how each late guest's t90 relates to how long its
# workload took to touch its memory (results/churn-floor/README.md). Run
# it under the testbed's lock (flock /tmp/numaorch-heavy.lock) with the
# build done.
set -eu
out=$1
rounds=${2:-3}
shift $(($# > 1 ? 2 : 1))
[ $# -gt 0 ] || set -- numaorchd kernel none
here=$(cd "$(dirname "$0")" && pwd)
"$here/repeat.sh" "$out" churn "$rounds" "$@" >/dev/null
python3 "$here/churn_floor.py" "$out"
