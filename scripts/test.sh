#!/usr/bin/env bash
# knee's test command (the README's second command; CI runs exactly this).
set -euo pipefail
cd "$(dirname "$0")/.."
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted"; exit 1; fi
go vet ./...
# Every package, with the race detector on the ones that start goroutines
# (the timing-truth tests run without it: the detector slows the client ~10x).
# One package at a time (-p 1): several tests measure real timing against
# the embedded server, and two packages' loads on two cores disturb them.
go test -p 1 -count=1 ./...
go test -p 1 -count=1 -race -short $(go list ./... | grep -E '/(loadgen|simserver|selftest|store|stats|cli|web)$' || true)
