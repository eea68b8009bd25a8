#!/usr/bin/env bash
# endless.sh — issue 43 item 3: a long bench against a server that streams
# forever keeps its memory flat. Starts internal/hostile's server with one
# fault for every request (default never-ending: content chunks until the
# client gives up, so every request fails at knee's chunk bound), runs
#   knee bench --concurrency 4 --duration DURATION
# against it under /usr/bin/time -v, samples the bench's resident memory
# every tenth of the run, and prints it over time with the peak. It fails
# when the peak passes LIMIT_MB (256) or the bench crashes.
#
# Usage: bash scripts/endless.sh [KNEE_BINARY]   (default: builds ./cmd/knee)
#   DURATION=10m (default) LIMIT_MB=256 FAULT=never-ending|500|429 OUT=DIR
# OUT (default: a temporary folder) receives records.jsonl and the reports,
# as a user's --out would: the records stream there, not into memory.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/knee-endless.XXXXXX")
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
knee=${1:-}
if [ -z "$knee" ]; then
	knee=$tmp/knee
	(cd "$here" && go build -o "$knee" ./cmd/knee) || exit 1
fi
(cd "$here" && go build -o "$tmp/hostileserver" ./internal/hostile/cmd/hostileserver) || exit 1
duration=${DURATION:-10m}
limit=${LIMIT_MB:-256}
fault=${FAULT:-never-ending}
out=${OUT:-$tmp/out}
port=$((18800 + RANDOM % 1000))

"$tmp/hostileserver" -fault "$fault" -addr "127.0.0.1:$port" >"$tmp/server.url" 2>"$tmp/server.err" &
server=$!
for _ in $(seq 50); do [ -s "$tmp/server.url" ] && break; sleep 0.1; done
url=$(cat "$tmp/server.url")
[ -n "$url" ] || { echo "the hostile server did not start:"; cat "$tmp/server.err"; exit 1; }

secs=$(python3 -c "import re,sys; s=sys.argv[1]; m=re.fullmatch(r'(\d+)(s|m|h)', s); print(int(m[1])*{'s':1,'m':60,'h':3600}[m[2]])" "$duration") || {
	echo "DURATION $duration: want a number of s, m or h"; exit 2; }
echo "knee bench --url $url --concurrency 4 --duration $duration (fault $fault), RSS every $((secs / 10)) s"
/usr/bin/time -v -o "$tmp/time.txt" "$knee" bench --url "$url" --model m --concurrency 4 --duration "$duration" \
	--input-tokens 16 --output-tokens 128 --no-store --quiet --out "$out" >"$tmp/report.txt" 2>"$tmp/stderr.txt" &
timer=$!
start=$(date +%s)
for i in $(seq 1 9); do
	sleep $((secs / 10))
	pid=$(pgrep -P "$timer" | head -1)
	rss=$(awk '/^VmRSS/ {print int($2/1024)}' "/proc/$pid/status" 2>/dev/null)
	recs=$(wc -l <"$out/records.jsonl" 2>/dev/null || echo 0)
	echo "  $(( $(date +%s) - start )) s: RSS ${rss:-?} MB, $recs records written"
done
wait "$timer"
rc=$?
peak=$(awk -F': ' '/Maximum resident set size/ {print int($2/1024)}' "$tmp/time.txt")
echo "exit $rc; $(wc -l <"$out/records.jsonl") records; peak RSS $peak MB (limit $limit MB)"
tail -3 "$tmp/stderr.txt"
grep -q 'fatal error\|panic' "$tmp/stderr.txt" && { echo "FAIL: the bench crashed"; exit 1; }
[ "$peak" -le "$limit" ] || { echo "FAIL: peak RSS $peak MB over $limit MB"; exit 1; }
echo "ok"
