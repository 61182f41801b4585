#!/usr/bin/env bash
# `npm run demo`: sets up a bare machine (idempotent), builds the Node package
# and runs the demo on a generated session.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh --node
node scripts/demo.mjs "$@"
