#!/usr/bin/env bash
# Builds everything: the napi addon, the wasm package (web + nodejs targets,
# optimized with binaryen's wasm-opt) and the TypeScript layers.
# `--node`: only what the Node package needs (the demo and the benchmark use it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
node_only=0
[ "${1:-}" = "--node" ] && node_only=1
export PATH="$PWD/node_modules/.bin:$PATH"

log() { printf '\033[1;34mbuild:\033[0m %s\n' "$*" >&2; }

log "napi addon (release)"
(cd npm/forkpoint && napi build --platform --release --manifest-path ../../crates/napi/Cargo.toml \
  --output-dir native --js index.js --dts index.d.ts)
# The binary stays in native/ (the generated loader tries ./forkpoint.<platform>.node
# first, so the workspace, the demo and the tests use it) and is copied into its
# platform package, npm/forkpoint/npm/<platform>/, the one the `forkpoint`
# tarball gets it from (its `files` leave native/*.node out). A copy, not
# `napi artifacts`: that one insists on a binary for every target in `napi.targets`
# (the release workflow runs it, .github/workflows/release.yml). Other targets:
# scripts/build-targets.sh.
for f in npm/forkpoint/native/forkpoint.*.node; do
  platform=${f#npm/forkpoint/native/forkpoint.}
  platform=${platform%.node}
  if [ -d "npm/forkpoint/npm/$platform" ]; then cp "$f" "npm/forkpoint/npm/$platform/"
  else log "note: no binary package is published for $platform (npm/forkpoint/npm/$platform); the workspace uses native/"; fi
done

# For the tests only (not in the package): the storage contract suite over
# FileStorage, exported as runStorageContract (a debug build: it compiles fast).
log "napi addon with the storage contract (tests)"
rm -rf tests/native-contract
(cd npm/forkpoint && napi build --platform --manifest-path ../../crates/napi/Cargo.toml --features contract \
  --output-dir ../../tests/native-contract --no-js --dts index.d.ts)

if [ "$node_only" = 1 ]; then
  log "TypeScript layers (Node)"
  npm run build --silent -w @forkpoint/shared
  npm run build --silent -w forkpoint
  exit 0
fi

log "wasm module"
cargo build --quiet --target wasm32-unknown-unknown --profile wasm-release -p forkpoint-wasm
W=target/wasm32-unknown-unknown/wasm-release/forkpoint_wasm.wasm
for target in web nodejs; do
  out=wasm/pkg/${target%js}
  rm -rf "$out"
  wasm-bindgen "$W" --target "$target" --remove-name-section --remove-producers-section --out-dir "$out"
  wasm-opt -O3 --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals \
    "$out/forkpoint_wasm_bg.wasm" -o "$out/forkpoint_wasm_bg.wasm"
done
echo '{"type":"module"}' > wasm/pkg/web/package.json
echo '{"type":"commonjs"}' > wasm/pkg/node/package.json
# The web build's module inlined (base64) and its glue's default URL removed:
# bundlers need no configuration (scripts/wasm-inline.mjs).
node scripts/wasm-inline.mjs wasm/pkg/web

# For the tests only (not in the package): the storage contract suite over
# IndexedDB, exported as runStorageContract (a debug build: it compiles fast).
log "wasm module with the storage contract (tests)"
cargo build --quiet --target wasm32-unknown-unknown -p forkpoint-wasm --features contract
C=target/wasm32-unknown-unknown/debug/forkpoint_wasm.wasm
for target in web nodejs; do
  out=wasm/pkg/contract-${target%js}
  rm -rf "$out"
  wasm-bindgen "$C" --target "$target" --out-dir "$out"
done
echo '{"type":"module"}' > wasm/pkg/contract-web/package.json
echo '{"type":"commonjs"}' > wasm/pkg/contract-node/package.json

log "generated TypeScript types"
node scripts/gen-types.mjs

log "TypeScript layers"
npm run build --silent -w @forkpoint/shared
npm run build --silent -w forkpoint
npm run build --silent -w forkpoint-web
