// One benchmark measurement in a fresh process: `node bench/worker.mjs <mode> <file>`.
// Prints {ms, rssPeakKb, contextMessages}: time of the operation alone (process
// start and module loading excluded), the process's peak RSS (VmHWM).
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadReference, readLines } from '../tests/reference/pi-reference.mjs';

const require = createRequire(import.meta.url);
const [mode, file] = process.argv.slice(2);
const fp = require('forkpoint');
const web = mode.startsWith('wasm') ? await import('forkpoint-web') : null;

const peakKb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);

const ops = {
  // Node with the modules loaded and nothing else: the RSS baseline.
  baseline: async () => 0,
  // The floor: read the file's lines in JS without parsing them.
  read: async () => {
    let n = 0;
    readLines(file, () => n++);
    return -1;
  },
  // The floor of any loader: the file's bytes, read in 1 MiB chunks (no decoding).
  'read-bytes': async () => {
    const fd = openSync(file, 'r');
    const buf = Buffer.allocUnsafe(1 << 20);
    try {
      while (readSync(fd, buf, 0, buf.length, null) > 0);
    } finally {
      closeSync(fd);
    }
    return -1;
  },
  // The real pi (@mariozechner/pi-coding-agent): what users compare with.
  'pi-full': async () => {
    const { SessionManager } = await import('@mariozechner/pi-coding-agent');
    const t0 = performance.now();
    const n = SessionManager.open(file).buildSessionContext().messages.length;
    excluded = t0 - start; // the module's loading is not timed
    return n;
  },
  // Plain JS as pi does it: every line JSON.parse'd, then the context built.
  'js-full': async () => loadReference(file).context.messages.length,
  'napi-full': async () => (await fp.SessionLoader.open(file)).getSessionContext().messages.length,
  'wasm-full': async () => web.Session.fromJsonl(readFileSync(file)).getSessionContext().messages.length,
  'napi-lazy-scan': async () => (await fp.loadSessionLazy(file, { useHint: false })).getSessionContext().messages.length,
  // The first open of a session without a hint (it scans, then writes one).
  'napi-lazy-first': async () => {
    const s = await fp.loadSessionLazy(file);
    if (s.getMetadata().mode !== 'scan') throw new Error('a resume hint was there');
    return s.getSessionContext().messages.length;
  },
  'napi-lazy-hint': async () => {
    const s = await fp.loadSessionLazy(file);
    if (s.getMetadata().mode !== 'hint') throw new Error('no usable resume hint');
    return s.getSessionContext().messages.length;
  },
};

let start = 0;
let excluded = 0;
try {
  start = performance.now();
  const contextMessages = await ops[mode]();
  const ms = performance.now() - start - excluded;
  process.stdout.write(JSON.stringify({ ms, rssPeakKb: peakKb(), contextMessages }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e?.message ?? e).slice(0, 300) }) + '\n');
}
