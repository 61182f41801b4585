#!/usr/bin/env bash
# Installs what building and testing forkpoint needs on a bare machine of this
# kind, skipping whatever is already there. Usage: scripts/setup.sh [--browser]
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_BINDGEN_VERSION=0.2.130 # must equal the wasm-bindgen crate pinned in Cargo.toml
want_browser=0
[ "${1:-}" = "--browser" ] && want_browser=1

log() { printf '\033[1;34msetup:\033[0m %s\n' "$*" >&2; }

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown Rust target"
  rustup target add wasm32-unknown-unknown
fi

if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 5 minutes, once)"
  # No --locked: the registry mirror lacks a dependency version the lock file names.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi

if [ "$want_browser" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  log "installing Debian's Chromium for the browser tests"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium chromium-driver
fi

# PostgreSQL's server binaries, for the tests' throwaway clusters (no service is started).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v pg_ctl >/dev/null 2>&1; then
  log "installing Debian's PostgreSQL for the PostgresStore tests"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q postgresql
fi

stamp=node_modules/.forkpoint-install-stamp
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ package.json -nt "$stamp" ]; then
  log "installing npm dependencies (npm ci: exactly the lock file)"
  # The lock keeps every platform's optional packages (esbuild, rolldown, …);
  # `npm test` checks it matches package.json (scripts/check-lock.mjs).
  npm ci --no-audit --no-fund
  touch "$stamp"
fi
