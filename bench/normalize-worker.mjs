// One measurement of the conversion benchmark, in its own process:
//   node normalize-worker.mjs MODE TARGET CONTEXT_JSON
// MODE: js (JSON.parse + map + JSON.stringify), napi / wasm (forkpoint from the
// context's JSON text to the body's text), napi-objects (forkpoint from JS objects).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { baseline } from './normalize-baseline.mjs';

const [mode, target, file] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const text = readFileSync(file, 'utf8');
let convert;
if (mode === 'js') convert = (t) => JSON.stringify(baseline[target](JSON.parse(t)));
else if (mode === 'napi') {
  const f = require('forkpoint');
  convert = (t) => f.toProvider(t, target).body;
} else if (mode === 'napi-objects') {
  const f = require('forkpoint');
  const objects = JSON.parse(text);
  convert = () => f.toProvider(objects, target).body;
} else if (mode === 'wasm') {
  const w = await import('forkpoint-web');
  convert = (t) => w.toProvider(t, target).body;
} else throw new Error(`unknown mode ${mode}`);
const t0 = process.hrtime.bigint();
const body = convert(text);
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
const { maxRSS } = process.resourceUsage();
console.log(JSON.stringify({ ms, bodyBytes: Buffer.byteLength(body), rssPeakKb: maxRSS }));
