#!/usr/bin/env bash
# knee's test command (the README's second command; CI runs exactly this).
set -euo pipefail
cd "$(dirname "$0")/.."
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted"; exit 1; fi
go vet ./...
# The packages whose tests time nothing real (virtual time, pure functions,
# files, loopback servers asserted on content alone) run side by side: what
# they assert does not depend on the CPU they get. Every other package (the
# ones that measure real time against the embedded server, a child process,
# a browser, the kernel's clocks or a database's timeouts, and any package
# not listed here) runs one at a time (-p 1), since two packages' loads on
# two cores disturb what they measure. A package joins this list only once
# its tests are known to time nothing.
untimed='/internal/(archtest|badinput|cluster|cmdhelp|compare|diagnose|enginesetup|hfconfig|ingest|junit|lab|openai|plan|prompttok|record|redact|report|runcheck|runs|scenario|serverprofile|sim|simengine|slo|sse|stats|sweep|tracetest|workload)$'
# The packages that start goroutines, run again under the race detector.
# The timing-truth tests run without it (the detector slows the client
# ~10x): under -race, loadgen and scrape skip them (race_on_test.go) and
# internal/cli compiles out its long end-to-end runs (long_e2e_test.go,
# which names the shorter tests that run the same goroutines); -short
# shortens the rest (hostile's rounds, stats's million-record memory test).
raced='/internal/(loadgen|simserver|selftest|store|stats|cli|web|hostile|livemetrics|otelexport|cluster)$'
pkgs=$(go list ./... | grep -v '/internal/realserver$')
untimed_pkgs=$(echo "$pkgs" | grep -E "$untimed")
timed_pkgs=$(echo "$pkgs" | grep -v -E "$untimed")
timed_raced=$(echo "$timed_pkgs" | grep -E "$raced")
go test -count=1 -timeout 30m $untimed_pkgs
untimed_raced=$(echo "$untimed_pkgs" | grep -E "$raced" || true)
if [ -n "$untimed_raced" ]; then
  go test -count=1 -timeout 30m -race -short $untimed_raced
fi
# -p 1 builds one package at a time too: compile the timed packages' tests
# (plain and under the race detector) side by side first, running none
# (-run '^$'), so that the serial passes below only link and run.
# (What a failed build prints still shows: only the "ok" lines are dropped.)
go test -count=1 -run '^$' $timed_pkgs | { grep -v -E '^(ok|\?) ' || true; }
go test -count=1 -run '^$' -race $timed_raced | { grep -v -E '^(ok|\?) ' || true; }
# internal/cli's parallel tests (parallelUntimed in shard_kill_test.go, and
# TestDocsExamplesRun's pages) assert no time and mostly wait on simulated
# servers' clocks and timers: four at once, after its sequential (timing)
# tests. (Its race pass keeps the default two: there the detector makes
# them CPU-bound, and four at once gained nothing.)
go test -p 1 -count=1 -timeout 30m $(echo "$timed_pkgs" | grep -v '/internal/cli$')
go test -count=1 -timeout 30m -parallel 4 ./internal/cli/
# The real-server tests verbose, so that the log shows what they measured
# (the calibrated profile's held-out predictions against knee bench, the
# sweep's knee); they skip, saying why, where no server is set up.
go test -count=1 -timeout 20m -v ./internal/realserver/ | grep -v -E '^(=== (RUN|PAUSE|CONT)|PASS$)'
go test -p 1 -count=1 -timeout 30m -race -short $timed_raced
