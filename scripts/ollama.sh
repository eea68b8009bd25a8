#!/usr/bin/env bash
# A real inference server for knee's integration tests (internal/realserver):
# Ollama built from its Go module source, serving knee's random-weight test
# model on loopback.
#
#   scripts/ollama.sh build        build Ollama once (cached), print the binary's path
#   scripts/ollama.sh start DIR    build, write the model (and its tokenizer.json), start `ollama serve`, create
#                                  the model; writes DIR/env (the KNEE_REALSERVER_*
#                                  variables the tests read) and DIR/server.log
#   scripts/ollama.sh stop DIR     stop the server started in DIR
#
# Then: set -a; . DIR/env; set +a; go test ./internal/realserver/
#
# Building needs cgo (gcc, g++) and Debian's libstb-dev and nlohmann-json3-dev
# (Ollama's module zip leaves out its vendor/ folders; v0.6.5 is the last
# version whose remaining C headers Debian packages). About 3 CPU-minutes; the
# binary is cached under ${XDG_CACHE_HOME:-~/.cache}/knee/, keyed by version,
# compiler flags, Go version and CPU architecture. Environment:
#   KNEE_OLLAMA_PORT      first port to try (default 11534; the next free one is used)
#   OLLAMA_NUM_PARALLEL   parallel sequences (default 4; the tests' knee depends on it)
set -euo pipefail
cd "$(dirname "$0")/.."

version=v0.6.5
module=github.com/ollama/ollama
# -O3 -march=native: ggml's CPU kernels are 4x slower at cgo's default -O2
# without SIMD flags; the binary is only ever run on the machine that built it.
cflags="-O3 -march=native"
# Where -march=native turns on AMX, ggml's headers expect its AMX backend,
# which Ollama's Go build does not compile (undefined
# ggml_backend_amx_buffer_type at link time): keep AMX off.
if echo 'int main(void){return 0;}' | gcc -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 -x c -o /dev/null - 2>/dev/null; then
  cflags="$cflags -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
fi
cxxflags="$cflags -I/usr/include/stb"
ldflags="-s -w -X $module/version.Version=${version#v}"
model_name=knee-random-llama

cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/knee
key=$(printf '%s|%s|%s|%s|%s' "$cflags" "$cxxflags" "$ldflags" "$(go env GOVERSION)" "$(uname -m)" | sha256sum | cut -c1-12)
bin_dir=$cache_root/ollama-$version-$key
bin=$bin_dir/ollama

log() { echo "ollama.sh: $*" >&2; }

build() {
  if [ -x "$bin" ]; then
    log "reusing $bin"
    echo "$bin"
    return
  fi
  for h in /usr/include/stb/stb_image.h /usr/include/nlohmann/json.hpp; do
    if [ ! -f "$h" ]; then
      log "missing $h: apt-get install libstb-dev nlohmann-json3-dev"
      exit 1
    fi
  done
  local src_dir work start
  # Outside any module, so knee's go.mod is never touched.
  src_dir=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "$module@$version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [ -z "$src_dir" ] || [ ! -d "$src_dir" ]; then
    log "go mod download $module@$version gave no source folder"
    exit 1
  fi
  work=$(mktemp -d)
  cp -r "$src_dir/." "$work/"
  chmod -R u+w "$work" # the module cache is read-only
  mkdir -p "$bin_dir"
  log "building $module@$version into $bin (a few CPU-minutes, once)"
  start=$SECONDS
  (cd "$work" && CGO_ENABLED=1 CGO_CFLAGS="$cflags" CGO_CXXFLAGS="$cxxflags" \
    go build -ldflags "$ldflags" -o "$bin.tmp" .)
  mv "$bin.tmp" "$bin"
  rm -rf "$work"
  log "built in $((SECONDS - start)) s"
  echo "$bin"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local dir=$1 port host i
  build >/dev/null
  mkdir -p "$dir/models" "$dir/home" "$dir/model"
  dir=$(cd "$dir" && pwd)
  local info
  info=$(go run ./internal/realserver/cmd/testmodel -dir "$dir/model")
  port=${KNEE_OLLAMA_PORT:-11534}
  while ! port_free "$port"; do port=$((port + 1)); done
  host=127.0.0.1:$port
  # HOME: Ollama writes its key pair there; keep it in the temporary folder.
  # KEEP_ALIVE=-1: the model stays loaded, so no test pays a reload.
  HOME=$dir/home OLLAMA_HOST=$host OLLAMA_MODELS=$dir/models \
    OLLAMA_NUM_PARALLEL=${OLLAMA_NUM_PARALLEL:-4} OLLAMA_MAX_LOADED_MODELS=1 \
    OLLAMA_KEEP_ALIVE=-1 OLLAMA_NOPRUNE=1 \
    setsid "$bin" serve >"$dir/server.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  for i in $(seq 1 120); do
    if OLLAMA_HOST=$host "$bin" list >/dev/null 2>&1; then break; fi
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      log "ollama serve exited; its log:"
      tail -40 "$dir/server.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  OLLAMA_HOST=$host "$bin" create "$model_name" -f "$dir/model/Modelfile" >"$dir/create.log" 2>&1 ||
    { cat "$dir/create.log" >&2; exit 1; }
  # Load it now (one short generation), so the tests measure serving only.
  if ! OLLAMA_HOST=$host "$bin" run "$model_name" "hello" >"$dir/warmup.log" 2>&1; then
    log "the first generation failed: $(tail -c 300 "$dir/warmup.log"); server log:"
    tail -40 "$dir/server.log" >&2
    exit 1
  fi
  cat >"$dir/env" <<EOF
KNEE_REALSERVER_URL=http://$host
KNEE_REALSERVER_MODEL=$model_name
KNEE_REALSERVER_TOKENIZER=$dir/model/tokenizer.json
KNEE_REALSERVER_SERVER="ollama $version"
KNEE_REALSERVER_MODEL_INFO="$info"
KNEE_REALSERVER_PARALLEL=${OLLAMA_NUM_PARALLEL:-4}
EOF
  # The CI log names the server version and the model.
  log "serving $model_name ($info) with $(OLLAMA_HOST=$host "$bin" -v 2>&1 | sed -n 's/^ollama version is /ollama /p'), OLLAMA_NUM_PARALLEL=${OLLAMA_NUM_PARALLEL:-4}, at http://$host, pid $(cat "$dir/pid"), log $dir/server.log"
}

stop() {
  local dir=$1 pid
  [ -f "$dir/pid" ] || return 0
  pid=$(cat "$dir/pid")
  # Its own session (setsid): the group holds serve and its runner processes.
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

case ${1:-} in
  build) build ;;
  start) start "${2:?usage: ollama.sh start DIR}" ;;
  stop) stop "${2:?usage: ollama.sh stop DIR}" ;;
  *) echo "usage: scripts/ollama.sh build | start DIR | stop DIR" >&2; exit 2 ;;
esac
