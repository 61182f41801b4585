#!/usr/bin/env bash
# Builds the napi addon for the Linux targets a Linux x64 machine can
# cross-build, on demand (not part of scripts/build.sh or `npm test`; each is a
# release build of the Rust crates, about two minutes): the binary goes into
# its platform package, npm/forkpoint/npm/<platform>/ (not into native/: this
# machine loads only its own).
# The release workflow (.github/workflows/release.yml) builds every target on
# its own runner instead.
#   scripts/build-targets.sh [TRIPLE...]   (default: both below)
#   x86_64-unknown-linux-musl   Debian's musl-tools (musl-gcc links against musl's libc.so)
#   aarch64-unknown-linux-gnu   Debian's gcc-aarch64-linux-gnu (the cross linker)
# Installs the Rust target and the Debian package it needs if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
log() { printf '\033[1;34mbuild-targets:\033[0m %s\n' "$*" >&2; }

[ "$#" -gt 0 ] || set -- x86_64-unknown-linux-musl aarch64-unknown-linux-gnu
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
apt_updated=0
need_apt() { # command, package
  command -v "$1" >/dev/null 2>&1 && return
  log "installing Debian's $2"
  [ "$apt_updated" = 1 ] || { $SUDO apt-get update -q; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "$2"
}

for triple in "$@"; do
  unset RUSTFLAGS
  case "$triple" in
    x86_64-unknown-linux-musl)
      need_apt musl-gcc musl-tools
      # A cdylib links musl dynamically (`napi build` adds `-C target-feature=-crt-static`
      # to RUSTFLAGS for musl targets), and then libgcc_s (unwinding): musl-gcc
      # searches musl's folders only, so a folder holding just the host's
      # libgcc_s.so.1 is added for the link (nothing else of glibc's). At run
      # time a musl system's own libgcc_s.so.1 is used (Alpine: the libgcc
      # package, which Node needs too). RUSTFLAGS, not the target's variable:
      # napi build sets RUSTFLAGS, which cargo prefers.
      mkdir -p target/musl-link
      ln -sf "$(gcc -print-file-name=libgcc_s.so.1)" target/musl-link/libgcc_s.so.1
      export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER=musl-gcc
      export RUSTFLAGS="-C link-arg=-L$PWD/target/musl-link"
      ;;
    aarch64-unknown-linux-gnu)
      need_apt aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
      export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
      export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
      ;;
    *)
      echo "build-targets: $triple is built by the release workflow only (.github/workflows/release.yml)" >&2
      exit 2
      ;;
  esac
  rustup target list --installed | grep -qx "$triple" || rustup target add "$triple"
  log "napi addon for $triple (release)"
  # Into a folder of its own: with --no-js, napi build writes an index.d.ts
  # without the loader's declarations, and the committed one must stay as the
  # host build makes it. Only the binary is kept.
  out=target/napi-targets/$triple
  rm -rf "$out"
  (cd npm/forkpoint && napi build --platform --release --target "$triple" \
    --manifest-path ../../crates/napi/Cargo.toml --output-dir "../../$out" --no-js --dts index.d.ts)
  for f in "$out"/forkpoint.*.node; do
    platform=${f##*/forkpoint.}
    cp "$f" "npm/forkpoint/npm/${platform%.node}/"
  done
done
log "binaries: $(cd npm/forkpoint/npm && ls -- */*.node | tr '\n' ' ')"
