// The native addon, loaded through the loader napi-rs generates (./index.js):
// a binary next to it (a build in the repository), else the platform package
// npm installed as an optional dependency of `forkpoint`
// (`forkpoint-linux-x64-gnu`, …). Where none loads, this throws a
// ForkpointError with the stable code `UNSUPPORTED_PLATFORM` that names the
// platform and says what to install, in place of the loader's generic error
// (kept as `cause`). Written by hand, not generated.
'use strict';

/** The platforms a binary is published for: `forkpoint-<name>` (npm/forkpoint/npm/<name>/). */
const PUBLISHED = ['linux-x64-gnu', 'linux-x64-musl', 'linux-arm64-gnu', 'darwin-x64', 'darwin-arm64', 'win32-x64-msvc'];

/** `glibc` or `musl` on Linux (as the generated loader tells them apart), else undefined. */
function libc() {
  if (process.platform !== 'linux') return undefined;
  try {
    if (require('fs').readFileSync('/usr/bin/ldd', 'utf8').includes('musl')) return 'musl';
  } catch {
    // no ldd: ask the process report
  }
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
  if (report?.header?.glibcVersionRuntime) return 'glibc';
  return report?.sharedObjects?.some((f) => f.includes('libc.musl-') || f.includes('ld-musl-')) ? 'musl' : 'glibc';
}

/** The loader's errors (innermost causes too), one line each, less the "not found" ones of files and packages it tried. */
function causes(e) {
  const out = [];
  for (let c = e?.cause; c && out.length < 8; c = c.cause) {
    const line = String(c.message ?? c).split('\n')[0];
    if (!/^Cannot find (module|native binding)/.test(line) && !out.includes(line)) out.push(line);
  }
  return out;
}

function unsupportedPlatform(cause) {
  const { platform, arch } = process;
  const c = libc();
  const name = `${platform}-${arch}${c ? (c === 'musl' ? '-musl' : '-gnu') : platform === 'win32' ? '-msvc' : ''}`;
  const where = `${platform}-${arch}${c ? ` with ${c}` : ''}`;
  const pkg = `forkpoint-${name}`;
  const version = require('../package.json').version;
  let text;
  if (!PUBLISHED.includes(name)) {
    text =
      `forkpoint has no native binary for ${where} (process.platform: ${platform}, process.arch: ${arch}). ` +
      `Binaries are published for: ${PUBLISHED.join(', ')}.`;
  } else {
    let installed = false;
    try {
      require.resolve(`${pkg}/package.json`);
      installed = true;
    } catch {
      // not installed
    }
    text = installed
      ? `forkpoint's native binary for ${where} is installed (${pkg}) but does not load: ${causes(cause).join('; ') || 'see the cause'}.`
      : `forkpoint's native binary for ${where} is missing: install ${pkg} (\`npm install ${pkg}@${version}\`). ` +
        `npm installs it with forkpoint (as an optional dependency) unless optional dependencies are omitted ` +
        `(--omit=optional) or package-lock.json was made on another platform (then remove node_modules and ` +
        `package-lock.json and install again).`;
  }
  text += ` Without native code, the package forkpoint-web (WebAssembly) loads, writes and normalizes sessions in Node and browsers.`;
  // The package's ForkpointError (what `require('forkpoint').ForkpointError` is), so
  // `instanceof ForkpointError` and `e.code` work as for every other forkpoint error.
  const { ForkpointError } = require('../dist/shared/index.js');
  const error = new ForkpointError({ code: 'UNSUPPORTED_PLATFORM', message: text });
  error.cause = cause;
  return error;
}

let binding;
try {
  binding = require('./index.js');
} catch (cause) {
  throw unsupportedPlatform(cause);
}
module.exports = binding;
