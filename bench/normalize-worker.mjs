// One measurement of the conversion benchmark, in its own process:
//   node normalize-worker.mjs MODE TARGET CONTEXT_JSON SESSION_JSONL
// From the context's JSON text to the body's text:
//   js-text (JSON.parse + map + JSON.stringify), napi-text / wasm-text (toProvider on the text).
// From a loaded session (loading not timed) to the body's text:
//   js-session (getLlmContext() + map + JSON.stringify), napi-session / wasm-session
//   (session.toProvider: the context is built and converted natively).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { baseline } from './normalize-baseline.mjs';

const [mode, target, contextFile, sessionFile] = process.argv.slice(2);
const require = createRequire(import.meta.url);
let convert;
if (mode.endsWith('-text')) {
  const text = readFileSync(contextFile, 'utf8');
  if (mode === 'js-text') convert = () => JSON.stringify(baseline[target](JSON.parse(text)));
  else if (mode === 'napi-text') {
    const f = require('forkpoint');
    convert = () => f.toProvider(text, target).body;
  } else {
    const w = await import('forkpoint-web');
    convert = () => w.toProvider(text, target).body;
  }
} else {
  let session;
  if (mode === 'wasm-session') {
    const w = await import('forkpoint-web');
    session = w.Session.fromJsonl(readFileSync(sessionFile));
  } else {
    session = await require('forkpoint').SessionLoader.open(sessionFile);
  }
  if (mode === 'js-session') convert = () => JSON.stringify(baseline[target](session.getLlmContext()));
  else convert = () => session.toProvider(target).body;
}
const t0 = process.hrtime.bigint();
const body = convert();
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
const { maxRSS } = process.resourceUsage();
console.log(JSON.stringify({ ms, bodyBytes: Buffer.byteLength(body), rssPeakKb: maxRSS }));
