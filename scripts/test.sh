#!/usr/bin/env bash
# `npm test`: sets up a bare machine (idempotent), then runs every check:
# formatting, clippy, Rust tests, the build, drift of generated files, type
# checks, the JS contract suite against both builds, the Chromium test and the
# packed packages in fresh projects.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
export PATH="$PWD/node_modules/.bin:$PATH"

# Every temporary file of the run (the tests', their children's, Cargo's test
# binaries', Chromium's) goes in one directory made here and removed at the
# end, passed or failed: a test killed or failed midway leaves nothing in
# /tmp, and neither does one that forgets its clean-up. Open to every user
# like /tmp itself: the PostgreSQL clusters run as `postgres`.
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/forkpoint-test.XXXXXX")
chmod 1777 "$run_tmp"
# A step killed at its time limit can leave servers it started (a PostgreSQL
# cluster, Chromium) running on files in here: they are stopped first.
trap 'pkill -KILL -f -- "$run_tmp/" 2>/dev/null || true; rm -rf "$run_tmp" 2>/dev/null || true' EXIT
export TMPDIR="$run_tmp"

# Every step has a time limit, so a hang fails the run with the step's name
# instead of running into CI's own limit.
step() {
  local name=$1
  shift
  printf '\n\033[1;32m== %s\033[0m\n' "$name" >&2
  local t0=$SECONDS
  local rc=0
  timeout --kill-after=30 "${STEP_LIMIT_S:-1500}" "$@" || rc=$?
  if [ "$rc" != 0 ]; then
    [ "$rc" = 124 ] && printf '\033[1;31m   step timed out after %ss: %s\033[0m\n' "${STEP_LIMIT_S:-1500}" "$name" >&2
    return "$rc"
  fi
  printf '\033[2m   (%ss)\033[0m\n' "$((SECONDS - t0))" >&2
}

step "package-lock.json matches package.json (npm ci installs it unchanged)" node scripts/check-lock.mjs
step "rustfmt" cargo fmt --all --check
step "clippy" cargo clippy --quiet --workspace --all-targets --features forkpoint-napi/contract -- -D warnings
step "clippy (wasm32)" cargo clippy --quiet -p forkpoint-wasm --target wasm32-unknown-unknown -- -D warnings
step "rustdoc (no broken links or HTML)" env RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps --workspace
step "Rust tests" cargo test --quiet --workspace
step "build" bash scripts/build.sh
if git rev-parse --git-dir >/dev/null 2>&1; then
  step "generated files are committed and current" \
    git diff --exit-code --stat -- ts-types npm/forkpoint/native/index.d.ts npm/forkpoint/native/index.js
fi
step "TypeScript API types" tsc -p tests/types
step "JS contract suite (napi)" env FORKPOINT_BACKEND=napi node --test tests/js/
step "JS agent suite on PostgresStore (a throwaway cluster)" env FORKPOINT_BACKEND=napi FORKPOINT_AGENT_STORE=postgres node --test tests/js/agent.test.mjs tests/support/
step "JS contract suite (wasm)" env FORKPOINT_BACKEND=wasm node --test tests/js/contract.test.mjs tests/js/events.test.mjs tests/js/normalize.test.mjs tests/js/migrate.test.mjs
step "browser (Chromium)" node --test --test-concurrency=1 tests/browser/
step "packages: npm pack, install the tarballs into fresh projects (CJS/ESM TypeScript, Vite, esbuild, webpack), run in Node and Chromium" \
  node --test --test-concurrency=1 tests/package/
step "reliability: 15 SIGKILLs of a busy agent, each followed by a crash resume and the checks" \
  node scripts/reliability.mjs --trials 15 --seed 42 --quiet
step "reliability on PostgreSQL: 3 trials of two workers on two hosts, one SIGKILLed or cut off mid tool call" \
  node scripts/reliability.mjs --store postgres --trials 3 --seed 42 --quiet
printf '\n\033[1;32mall checks passed\033[0m\n' >&2
