// One event-log measurement in a fresh process: `node bench/events-worker.mjs <mode> <file> [args]`.
import { appendFileSync, closeSync, fdatasyncSync, fstatSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { EventLog, EventBus } = require('forkpoint');
const [mode, file, a1] = process.argv.slice(2);
const peakKb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
const pct = (xs, p) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const event = (i) => ({ type: 'text_chunk', step: i >> 6, delta: `chunk ${i} of the model's streamed answer, about a hundred bytes long..` });

async function append(durability, n, concurrency) {
  const log = await EventLog.open(file, { durability });
  const bus = new EventBus(log);
  const lat = [];
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const s = performance.now();
      await bus.emit(event(next));
      lat.push(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const ms = performance.now() - t0;
  await log.close();
  return { events: n, ms, perSec: (n / ms) * 1000, p50: pct(lat, 50), p99: pct(lat, 99) };
}

// Plain JS: append each event with its own write and fdatasync (durable), one at a time.
function jsAppend(n, sync) {
  const fd = openSync(file, 'a');
  const lat = [];
  const t0 = performance.now();
  for (let i = 1; i <= n; i++) {
    const s = performance.now();
    writeSync(fd, JSON.stringify({ seq: i, timestamp: Date.now(), channel: 'progress', ...event(i) }) + '\n');
    if (sync) fdatasyncSync(fd);
    lat.push(performance.now() - s);
  }
  const ms = performance.now() - t0;
  closeSync(fd);
  return { events: n, ms, perSec: (n / ms) * 1000, p50: pct(lat, 50), p99: pct(lat, 99) };
}

// forkpoint: open the log, then readSince(since): the events as an array.
async function fpReadSince(since) {
  const t0 = performance.now();
  const log = await EventLog.open(file, { readOnly: true });
  const t1 = performance.now();
  const events = await log.readSince(since);
  const ms = performance.now() - t0;
  const readMs = performance.now() - t1;
  if (events.length === 0 || events[0].seq !== since + 1) throw new Error(`readSince gave ${events.length} events from ${events[0]?.seq}`);
  await log.close();
  return { first: ms, ms, readMs, count: events.length };
}

// forkpoint: open the log, then the same read as JSON text (no JS objects made).
async function fpReadJson(since) {
  const t0 = performance.now();
  const log = await EventLog.open(file, { readOnly: true });
  const text = await log.native.readJson(since, null, '{}');
  const ms = performance.now() - t0;
  if (!text.startsWith(`[{"seq":${since + 1},`)) throw new Error('readJson gave the wrong events');
  await log.close();
  return { first: ms, ms, count: (text.match(/"seq":/g) ?? []).length };
}

// The floor of making the objects: JSON.parse of the same lines, already in memory.
function jsParseFloor(since) {
  const fd = openSync(file, 'r');
  const size = fstatSync(fd).size;
  const want = Math.min(size, 8 << 20);
  const buf = Buffer.alloc(want);
  readSync(fd, buf, 0, want, size - want);
  closeSync(fd);
  const lines = buf.toString('latin1').split('\n').slice(1).filter((l) => l && Number(/^\{"seq":(\d+)/.exec(l)?.[1]) > since);
  const text = `[${lines.join(',')}]`;
  const t0 = performance.now();
  const events = JSON.parse(text);
  const ms = performance.now() - t0;
  return { first: ms, ms, count: events.length };
}

// forkpoint: open the log, subscribe after `since`, time the first event and the last.
async function fpSubscribe(since) {
  const t0 = performance.now();
  const log = await EventLog.open(file, { readOnly: true });
  const last = (await log.lastBookmark()).seq;
  let first;
  let count = 0;
  let expect = since + 1;
  for await (const { event: e } of new EventBus(log).subscribe({ since })) {
    if (first === undefined) first = performance.now() - t0;
    if (e.seq !== expect++) throw new Error(`subscribe gave seq ${e.seq}, expected ${expect - 1}`);
    count++;
    if (e.seq === last) break;
  }
  const ms = performance.now() - t0;
  await log.close();
  return { first, ms, count };
}

// Plain JS, as Kode reads its event logs: scan every line, JSON.parse, keep seq > since.
async function jsScan(since) {
  const t0 = performance.now();
  let first;
  let count = 0;
  const rl = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line) continue;
    const e = JSON.parse(line);
    if (e.seq > since) {
      if (first === undefined) first = performance.now() - t0;
      count++;
    }
  }
  return { first, ms: performance.now() - t0, count };
}

const ops = {
  'fp-append': () => append(a1.split(':')[0], Number(a1.split(':')[1]), Number(a1.split(':')[2])),
  'js-append-fsync': () => jsAppend(Number(a1), true),
  'js-append-nosync': () => jsAppend(Number(a1), false),
  'fp-readsince': () => fpReadSince(Number(a1)),
  'fp-subscribe': () => fpSubscribe(Number(a1)),
  'fp-readjson': () => fpReadJson(Number(a1)),
  'js-parse-floor': () => jsParseFloor(Number(a1)),
  'js-scan': () => jsScan(Number(a1)),
};
try {
  const r = await ops[mode]();
  process.stdout.write(JSON.stringify({ ...r, rssPeakKb: peakKb() }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e?.message ?? e).slice(0, 300) }) + '\n');
}
void appendFileSync;
