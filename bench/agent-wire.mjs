// The per-step cost of an agent on a real wire as its context grows (`npm run
// bench`): an agent whose session holds ROUNDS tool rounds (~9 KiB each) calls
// a local server that reads each request's whole body and answers Anthropic's
// stream. forkpoint: `Agent` + `createProvider` (each step stored durably; the
// request converts only what is new and sends the kept conversion as the
// pieces it already made). Plain JS: the messages in memory, each step maps
// them all (bench/normalize-baseline.mjs), JSON.stringify, fetch, reads the
// stream (stores nothing). The median of STEPS steps after a first one, in a
// fresh process each; a context and its eighth, to see the cost follow the
// length or not. Adds "agentWire" to bench/results.json.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { once } from 'node:events';

const root = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Number(process.env.BENCH_WIRE_ROUNDS ?? 10000);
const STEPS = Number(process.env.BENCH_WIRE_STEPS ?? 7);
const base = join(root, 'bench/data/agent-wire');

const server = spawn(process.execPath, [join(root, 'bench/wire-server.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
const [line] = await once(server.stdout, 'data');
const url = String(line).trim();

function run(...args) {
  const r = spawnSync(process.execPath, [join(root, 'bench/agent-wire-worker.mjs'), ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const out = JSON.parse((r.stdout.trim().split('\n').pop() || '{}'));
  if (out.error || r.status !== 0) throw new Error(`${args[0]}: ${out.error ?? r.stderr.slice(-800)}`);
  return out;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const rows = [];
try {
  for (const rounds of [Math.round(ROUNDS / 8), ROUNDS]) {
    const dir = join(base, String(rounds));
    run('build', dir, String(rounds));
    const bytes = readFileSync(join(dir, 'wire', 'session.jsonl')).byteLength;
    const f = run('fp', dir, url, String(STEPS));
    const j = run('js', dir, url, String(STEPS));
    rows.push({ rounds, sessionMiB: bytes / 2 ** 20, fpFirstMs: f.firstMs, fpMs: median(f.ms), fpMax: Math.max(...f.ms), jsMs: median(j.ms), jsMax: Math.max(...j.ms), floorMs: median(j.floorMs), fpRssMb: f.rssPeakKb / 1024, jsRssMb: j.rssPeakKb / 1024 });
    rmSync(dir, { recursive: true, force: true });
  }
} finally {
  server.kill();
}

const pad = (s, n) => String(s).padStart(n);
const out = [];
out.push(`agent on a real wire — ${new Date().toISOString()} — Anthropic's format, a local server reading each whole body; median of ${STEPS} steps after the first`);
out.push('');
out.push(`${'session'.padEnd(26)}${pad('forkpoint ms/step', 19)}${pad('max', 7)}${pad('plain JS ms/step', 18)}${pad('max', 7)}${pad('vs JS', 8)}${pad('wire floor', 12)}${pad('first step', 12)}${pad('RSS MB fp/js', 15)}`);
for (const r of rows) {
  out.push(`${`${r.rounds} rounds, ${r.sessionMiB.toFixed(1)} MiB`.padEnd(26)}${pad(r.fpMs.toFixed(1), 19)}${pad(r.fpMax.toFixed(0), 7)}${pad(r.jsMs.toFixed(1), 18)}${pad(r.jsMax.toFixed(0), 7)}${pad((r.jsMs / r.fpMs).toFixed(2) + '×', 8)}${pad(r.floorMs.toFixed(1), 12)}${pad(r.fpFirstMs.toFixed(0), 12)}${pad(`${r.fpRssMb.toFixed(0)}/${r.jsRssMb.toFixed(0)}`, 15)}`);
}
const [s, l] = rows;
out.push('');
out.push(`whole/⅛ (a step on the whole context / on its eighth): forkpoint ${(l.fpMs / s.fpMs).toFixed(2)}×, plain JS ${(l.jsMs / s.jsMs).toFixed(2)}× (the body itself is ${(l.sessionMiB / s.sessionMiB).toFixed(1)}× as long: sending it is the part that must follow the length)`);
out.push('wire floor: the same number of bytes, made before the clock starts, sent as a stream of 1 MiB parts and the answer read (no conversion, nothing stored).');
out.push('first step: forkpoint after a resume from the tail loads the whole session and converts it all once (plain JS read and parsed it before its first step, not timed).');
console.log(out.join('\n'));
const resultsFile = join(root, 'bench/results.json');
const results = existsSync(resultsFile) ? JSON.parse(readFileSync(resultsFile, 'utf8')) : {};
results.agentWire = { date: new Date().toISOString(), rows };
writeFileSync(resultsFile, JSON.stringify(results, null, 2));
