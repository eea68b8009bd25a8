#!/bin/sh
# Builds knee ui's API as WebAssembly for knee ui --export (go generate in
# internal/web runs this). -trimpath and -buildvcs=false keep the bytes the
# same for the same sources, so TestWasmUpToDate can compare them; gzip -n
# leaves out the name and time for the same reason.
set -e
out=${1:-.}
GOOS=js GOARCH=wasm go build -trimpath -buildvcs=false -ldflags=-s -o "$out/knee.wasm" ../../cmd/knee-wasm
gzip -9 -n -f "$out/knee.wasm"
cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" "$out/wasm_exec.js"
chmod 644 "$out/wasm_exec.js"
