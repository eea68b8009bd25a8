#!/usr/bin/env bash
# knee's test command (the README's second command; CI runs exactly this).
set -euo pipefail
cd "$(dirname "$0")/.."
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted"; exit 1; fi
go vet ./...
# Every package, with the race detector on the ones that start goroutines
# (the timing-truth tests run without it: the detector slows the client ~10x;
# there -short skips the long end-to-end tests, each naming the smaller
# tests that run its goroutines: internal/cli's skipEndToEndIfShort).
# One package at a time (-p 1): several tests measure real timing against
# the embedded server, and two packages' loads on two cores disturb them
# (internal/cli's tests that time nothing overlap one another after its
# others: parallelUntimed).
go test -p 1 -count=1 -timeout 30m $(go list ./... | grep -v '/internal/realserver$')
# The real-server tests verbose, so that the log shows what they measured
# (the calibrated profile's held-out predictions against knee bench, the
# sweep's knee); they skip, saying why, where no server is set up.
go test -count=1 -timeout 20m -v ./internal/realserver/ | grep -v -E '^(=== (RUN|PAUSE|CONT)|PASS$)'
go test -p 1 -count=1 -timeout 30m -race -short $(go list ./... | grep -E '/(loadgen|simserver|selftest|store|stats|cli|web|hostile|livemetrics|otelexport|cluster)$' || true)
