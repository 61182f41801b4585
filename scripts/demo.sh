#!/usr/bin/env bash
# `npm run demo`: sets up a bare machine (idempotent), builds the Node package,
# runs the agent demo (crash, resume, fork, replay; the main job) and then the
# session and event-log demo on a generated session.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh --node
node scripts/demo-agent.mjs
node scripts/demo.mjs "$@"
