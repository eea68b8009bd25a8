#!/usr/bin/env bash
# bigfile.sh — issue 43 item 1: 2 GiB inputs are answered or refused, never
# a crash. Builds, in a temporary folder deleted at exit:
#   records.jsonl  2 GiB of real knee records (a knee sim --out run, repeated)
#   vllm.json      a vLLM bench serve result whose "ttfts" array is 2 GiB
# and runs knee diagnose, knee import, knee sweep --from and knee bench --trace
# on each under `ulimit -v 1000000` (about 1 GB of address space) and a 60 s
# timeout, printing exit status, seconds, peak RSS and the last line said.
# A "fatal error" (the Go runtime out of memory) or a timeout fails the script.
#
# Usage: bash scripts/bigfile.sh [KNEE_BINARY]   (default: builds ./cmd/knee)
# Heavy: about 4.5 GiB of disk for a few minutes, and several minutes of CPU.
#
# MALLOC_ARENA_MAX=2: a cgo build of knee links glibc, whose malloc reserves
# 64 MiB of address space per thread arena; under ulimit -v 1000000 that alone
# leaves the Go heap too little to start (even `knee version` fails), whatever
# knee reads. A CGO_ENABLED=0 build needs no such setting.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/knee-bigfile.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
knee=${1:-}
if [ -z "$knee" ]; then
	knee=$tmp/knee
	(cd "$here" && go build -o "$knee" ./cmd/knee) || exit 1
fi
export MALLOC_ARENA_MAX=2
size=$((2 << 30))

echo "building the files in $tmp"
"$knee" sim --rate 20 --requests 20000 --out "$tmp/sim" >/dev/null 2>&1 || { echo "knee sim failed"; exit 1; }
python3 - "$tmp/sim/records.jsonl" "$tmp/records.jsonl" "$size" <<'PY'
import sys
src, out, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, 'rb').read()
with open(out, 'wb') as f:
    n = 0
    while n < size:
        f.write(data); n += len(data)
PY
python3 - "$tmp/vllm.json" "$size" <<'PY'
import sys
out, size = sys.argv[1], int(sys.argv[2])
item = b"0.123456, "
n = size // len(item)
with open(out, 'wb') as f:
    f.write(b'{"date": "20261101-120000", "backend": "openai-chat", "model_id": "m", "request_rate": 10.0, "max_concurrency": 8, '
            b'"duration": %d, "completed": %d, "failed": 0, "ttfts": [' % (n // 10, n))
    chunk = item * (1 << 16)
    for _ in range(n >> 16):
        f.write(chunk)
    f.write(item * (n & 0xffff))
    f.write(b'0.1]}\n')
PY
ls -la "$tmp"/records.jsonl "$tmp"/vllm.json

fail=0
run() {
	local name=$1; shift
	local start end rc
	start=$(date +%s.%N)
	( ulimit -v 1000000; exec /usr/bin/time -f "%M" -o "$tmp/rss" timeout 60 "$knee" "$@" >"$tmp/out" 2>"$tmp/err" )
	rc=$?
	end=$(date +%s.%N)
	local said
	said=$(grep -v '^knee diagnose: judging' "$tmp/err" | tail -1 | cut -c1-220)
	[ -z "$said" ] && said=$(tail -1 "$tmp/out" | cut -c1-220)
	printf '%-34s exit %-3s %6.1f s  peak RSS %6s KB  %s\n' "$name" "$rc" "$(echo "$end - $start" | bc)" "$(tail -1 "$tmp/rss" 2>/dev/null)" "$said"
	if grep -q "fatal error" "$tmp/err"; then
		echo "  FAIL: crashed"; fail=1
	elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		# knee import streams a records.jsonl of any size; it answers with
		# how long it will take within seconds, and the 60 s cut is ours.
		if [ "$name" = "import records.jsonl" ] && grep -q "to go at this rate" "$tmp/err"; then
			echo "  (cut at 60 s by this script; it had said: $(grep "to go at this rate" "$tmp/err" | head -1 | cut -c1-160))"
		else
			echo "  FAIL: no answer within 60 s"; fail=1
		fi
	fi
}
for f in records.jsonl vllm.json; do
	run "diagnose $f" diagnose "$tmp/$f"
	run "import $f" import "$tmp/$f" --db "$tmp/knee-$f.db"
	run "sweep --from $f" sweep --from "$tmp/$f" --db "$tmp/knee-$f.db"
	run "bench --trace $f" bench --trace "$tmp/$f" --duration 5s --db "$tmp/knee-$f.db"
done
exit $fail
