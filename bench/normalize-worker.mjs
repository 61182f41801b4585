// One measurement of the conversion benchmark, in its own process:
//   node normalize-worker.mjs MODE TARGET CONTEXT_JSON SESSION_JSONL
// From the context's JSON text to the body's text:
//   js-text (JSON.parse + map + JSON.stringify), napi-text / wasm-text (toProvider on the text).
// From a loaded session (loading not timed) to the body's text:
//   js-session (getLlmContext() + map + JSON.stringify), napi-session / wasm-session
//   (session.toProvider: the context is built and converted natively).
// The incremental case an agent has (napi-step / wasm-step, FRACTION of the
// context's messages): the request before the last assistant turn is built
// (step N, converted whole), then the assistant turn and its results are
// pushed and the request built again (step N+1, timed: only what is new is
// converted); the body in parts, as an agent sends it (bodyParts: the kept
// part's pieces are those of step N, not copied), and joined (bodyBytes).
//   node normalize-worker.mjs MODE TARGET CONTEXT_JSON SESSION_JSONL [FRACTION]
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { baseline } from './normalize-baseline.mjs';

const [modeArg, target, contextFile, sessionFile, fraction] = process.argv.slice(2);
// MODE-bytes: the body as UTF-8 bytes, as it is sent (plain JS: Buffer.from of
// the JSON text, what fetch does with a string body; forkpoint: bodyBytes).
const bytes = modeArg.endsWith('-bytes');
const mode = bytes ? modeArg.slice(0, -'-bytes'.length) : modeArg;
const require = createRequire(import.meta.url);
let convert;
if (mode.endsWith('-step')) {
  const all = JSON.parse(readFileSync(contextFile, 'utf8'));
  const msgs = all.slice(0, Math.max(2, Math.round(all.length * Number(fraction ?? 1))));
  let a = msgs.length - 1;
  while (a > 0 && msgs[a].role !== 'assistant') a--;
  const { requestBuilder } = mode === 'napi-step' ? require('forkpoint') : await import('forkpoint-web');
  const b = requestBuilder(target);
  const before = JSON.stringify(msgs.slice(0, a));
  const added = JSON.stringify(msgs.slice(a));
  let t0 = process.hrtime.bigint();
  b.push(before);
  b.build();
  const firstMs = Number(process.hrtime.bigint() - t0) / 1e6;
  // A full GC first (the parent passes --expose-gc), so that no GC pause
  // falls inside the timed step: collecting step N's output means tracing
  // the 1.4 GB of JS objects parsed above, which stay alive. Without it,
  // about one step in five took 4–8 ms instead of under 1 ms, at either
  // length. An agent's process pays such pauses too, when its heap is large;
  // the goal is read without them.
  globalThis.gc?.();
  t0 = process.hrtime.bigint();
  b.push(added);
  const r = b.build();
  const parts = r.bodyParts;
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  // The same body as one array (a copy of it), for comparison.
  t0 = process.hrtime.bigint();
  const bytes = r.bodyBytes;
  const joinMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const { maxRSS } = process.resourceUsage();
  console.log(JSON.stringify({ ms, joinMs, parts: parts.length, firstMs, bodyBytes: bytes.byteLength, rssPeakKb: maxRSS, contextBytes: Buffer.byteLength(before) + Buffer.byteLength(added), messages: msgs.length, added: msgs.length - a, kept: b.kept }));
  process.exit(0);
}
if (mode.endsWith('-text')) {
  const text = readFileSync(contextFile, 'utf8');
  if (mode === 'js-text') convert = () => (bytes ? Buffer.from : (x) => x)(JSON.stringify(baseline[target](JSON.parse(text))));
  else if (mode === 'napi-text') {
    const f = require('forkpoint');
    convert = () => (bytes ? f.toProvider(text, target).bodyBytes : f.toProvider(text, target).body);
  } else {
    const w = await import('forkpoint-web');
    convert = () => (bytes ? w.toProvider(text, target).bodyBytes : w.toProvider(text, target).body);
  }
} else {
  let session;
  if (mode === 'wasm-session') {
    const w = await import('forkpoint-web');
    session = w.Session.fromJsonl(readFileSync(sessionFile));
  } else {
    session = await require('forkpoint').SessionLoader.open(sessionFile);
  }
  if (mode === 'js-session') convert = () => (bytes ? Buffer.from : (x) => x)(JSON.stringify(baseline[target](session.getLlmContext())));
  else convert = () => (bytes ? session.toProvider(target).bodyBytes : session.toProvider(target).body);
}
const t0 = process.hrtime.bigint();
const body = convert();
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
const { maxRSS } = process.resourceUsage();
console.log(JSON.stringify({ ms, bodyBytes: typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength, rssPeakKb: maxRSS }));
