#!/usr/bin/env bash
# `npm run bench`: builds what the benchmark runs (Node addon, wasm, native
# example), then runs bench/bench.mjs (sessions), bench/events.mjs (event logs) and
# bench/agent.mjs (a 1,000-step agent), bench/agent-wire.mjs (an agent's step on
# a real wire as its context grows), bench/stream.mjs (durable streaming from a
# provider against a plain reader), bench/normalize.mjs (provider conversion),
# bench/store.mjs (IndexedDB sessions in Chromium) and bench/agent-browser.mjs
# (the 1,000-step agent on IndexedDB in Chromium) and bench/postgres.mjs (agents on
# PostgreSQL across two worker processes, next to JSONStore).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cargo build --quiet --release -p forkpoint-fs --example bench_native
node bench/bench.mjs "$@"
node bench/events.mjs
node bench/agent.mjs
node bench/agent-wire.mjs
node bench/stream.mjs
node bench/normalize.mjs
node bench/store.mjs
node bench/agent-browser.mjs
node bench/postgres.mjs
