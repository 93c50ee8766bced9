#!/bin/sh
# make check-fuzz: run the API fuzzer for a bounded time from the seed
# corpus (tests/fuzz/corpus); any crash, leak, sanitizer report, timeout or
# malformed answer fails. New inputs go to a scratch corpus, not into the
# repository; a failing input is kept under build/fuzz/artifacts/, to
# reproduce with: build/fuzz/fuzz_api build/fuzz/artifacts/<file>
set -eu
cd "$(dirname "$0")/../.."
bin=${1:-build/fuzz/fuzz_api}
secs=${FUZZ_SECONDS:-60}
work=$(mktemp -d /tmp/numaorch-fuzz-corpus.XXXXXX)
trap 'rm -rf "$work"' EXIT
rm -rf build/fuzz/artifacts
mkdir -p build/fuzz/artifacts
echo "fuzz_api: ${secs}s from $(ls tests/fuzz/corpus | wc -l) seeds"
mkdir "$work/tmp" "$work/corpus"
# -detect_leaks=0 turns off libFuzzer's leak check after each input that
# grew the heap (the engine's state grows by design: reservations, stored
# policies), which stops the world every time; LeakSanitizer still checks
# once at exit, and memory any input leaked is unreachable by then.
status=0
TMPDIR="$work/tmp" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	"$bin" -max_total_time="$secs" -detect_leaks=0 -timeout=20 -rss_limit_mb=4096 -max_len=8192 \
	-dict=tests/fuzz/api.dict -artifact_prefix=build/fuzz/artifacts/ -print_final_stats=1 \
	"$work/corpus" tests/fuzz/corpus >"$work/log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
	tail -n 80 "$work/log"
	echo "fuzz_api: FAILED (exit $status); inputs in build/fuzz/artifacts/" >&2
	exit 1
fi
grep -E '^(stat::|Done|INFO: Loaded|#[0-9]+ +DONE)' "$work/log" || true
echo "fuzz_api: no crash in ${secs}s"
