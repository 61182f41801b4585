// `npm run reliability -- --trials N [--seed S] [--dir D]`: a child process runs
// a busy agent and is killed with SIGKILL at random moments (in and between
// model calls, tool runs, approvals, appends). After each kill the harness
// resumes the agent with strategy 'crash' and checks that every acknowledged
// message and event is there, no tool call is left without a result, no seq
// repeats, and the session and event files load strictly; then the child
// continues the agent and is killed again.
//
// `--store postgres` runs scripts/reliability-pg.mjs instead (two workers on
// two hosts sharing agents in PostgreSQL; see there); the default is `file`.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const storeAt = process.argv.findIndex((a) => a === '--store' || a.startsWith('--store='));
const storeKind = storeAt < 0 ? 'file' : process.argv[storeAt].includes('=') ? process.argv[storeAt].split('=')[1] : process.argv[storeAt + 1];
if (storeKind === 'postgres') {
  const { main } = await import('./reliability-pg.mjs');
  process.exit(await main(process.argv.slice(2)));
} else if (storeKind !== 'file') {
  console.error(`--store is 'file' (default) or 'postgres', not '${storeKind}'`);
  process.exit(2);
}

const require = createRequire(import.meta.url);
const { Agent, JSONStore, ToolRegistry, SessionLoader, EventLog } = require('forkpoint');
const { values: args } = parseArgs({
  options: { store: { type: 'string', default: 'file' }, trials: { type: 'string', default: '100' }, seed: { type: 'string', default: '1' }, dir: { type: 'string' }, quiet: { type: 'boolean', default: false } },
});
const trials = Number(args.trials);
const dir = args.dir ?? mkdtempSync(join(tmpdir(), 'fp-reliability-'));
const child = fileURLToPath(new URL('./reliability-child.mjs', import.meta.url));
let seed = Number(args.seed) >>> 0;
const rand = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 4294967296;
};

const acked = new Map(); // queueId → text
const events = new Map(); // seq → type
const stats = { trials: 0, killsAt: {}, sealed: 0, sealedByState: {}, ackedMessages: 0, ackedEvents: 0, repairedSessions: 0, maxSeq: 0 };
const fail = (why) => {
  console.error(`\nRELIABILITY FAILURE after ${stats.trials} trials (store kept at ${dir}): ${why}`);
  process.exit(1);
};

/** Runs the child until a random kill moment; resolves when it is dead. */
function runOnce(trial) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [child, dir, String(trial + 1000 * Number(args.seed))], { stdio: ['ignore', 'pipe', 'pipe'] });
    // Half the kills at a random time, half at a chosen kind of moment (plus a little).
    const target = rand() < 0.5 ? null : ['model-call', 'tool-running', 'approval', 'ack'][Math.floor(rand() * 4)];
    const skip = Math.floor(rand() * 4);
    let seen = 0;
    let killed = false;
    let buf = '';
    let err = '';
    const kill = (why) => {
      if (killed) return;
      killed = true;
      stats.killsAt[why] = (stats.killsAt[why] ?? 0) + 1;
      p.kill('SIGKILL');
    };
    p.stderr.on('data', (d) => (err += d));
    p.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const sp = line.indexOf(' ');
        const kind = line.slice(0, sp);
        const data = JSON.parse(line.slice(sp + 1));
        if (kind === 'ACK') acked.set(data.id, data.text);
        if (kind === 'EV') events.set(data.seq, data.type);
        if (kind === 'READY' && target === null) setTimeout(() => kill('random time'), rand() * 250);
        const what = kind === 'ACK' ? 'ack' : data.what;
        if (target !== null && what === target && seen++ >= skip) setTimeout(() => kill(`at ${target}`), rand() * 3);
      }
    });
    const guard = setTimeout(() => kill(target === null ? 'random time' : `timeout waiting for ${target}`), 3000);
    p.on('exit', (code, signal) => {
      clearTimeout(guard);
      if (signal === 'SIGKILL') resolve();
      else reject(new Error(`the child exited by itself (${code}): ${err.slice(-2000)}`));
    });
  });
}

async function check() {
  const store = new JSONStore(dir);
  const toolRegistry = new ToolRegistry();
  const model = { provider: 'scripted', model: 'busy-1', api: 'scripted', complete: async () => ({ content: [{ type: 'text', text: 'checker' }] }) };
  const agent = await Agent.resume('busy', { model }, { store, toolRegistry }, { strategy: 'crash' });
  const calls = await agent.toolCalls();
  for (const c of calls) {
    if (!['COMPLETED', 'FAILED', 'DENIED', 'SEALED'].includes(c.state)) fail(`call ${c.id} left ${c.state} after a crash resume`);
  }
  // Every tool call in the transcript has its result.
  const msgs = await agent.messages();
  const results = new Set(msgs.filter((m) => m.role === 'toolResult').map((m) => m.toolCallId));
  for (const m of msgs) {
    if (m.role !== 'assistant') continue;
    for (const b of m.content) if (b.type === 'toolCall' && !results.has(b.id)) fail(`tool call ${b.id} without a result`);
  }
  await agent.close();
  // The files load strictly (no lenient mode) after the resume repaired them.
  const sessionPath = join(dir, 'busy', 'session.jsonl');
  const s = await SessionLoader.open(sessionPath);
  const md = s.getMetadata();
  if (md.skippedLines !== 0) fail('the session has skipped lines');
  const text = readFileSync(sessionPath, 'utf8');
  const stored = new Set([...text.matchAll(/"queueId":"([^"]+)"/g)].map((m) => m[1]));
  for (const [id, msg] of acked) {
    if (!stored.has(id)) fail(`acknowledged message ${id} (${msg}) is missing`);
  }
  const log = await EventLog.open(join(dir, 'busy', 'events.jsonl'), { readOnly: true });
  const all = await log.readSince(null);
  await log.close();
  const bySeq = new Map();
  for (let i = 0; i < all.length; i++) {
    if (i > 0 && all[i].seq <= all[i - 1].seq) fail(`seq ${all[i].seq} after ${all[i - 1].seq}`);
    bySeq.set(all[i].seq, all[i].type);
  }
  for (const [seq, type] of events) {
    if (bySeq.get(seq) !== type) fail(`acknowledged event ${seq} (${type}) is ${bySeq.has(seq) ? `now ${bySeq.get(seq)}` : 'missing'}`);
  }
  const resumed = all.filter((e) => e.type === 'agent_resumed').at(-1);
  for (const c of resumed?.sealed ?? []) {
    stats.sealed++;
    stats.sealedByState[c.priorState] = (stats.sealedByState[c.priorState] ?? 0) + 1;
  }
  stats.ackedMessages = acked.size;
  stats.ackedEvents = events.size;
  stats.maxSeq = all.at(-1)?.seq ?? 0;
}

const t0 = performance.now();
for (let t = 0; t < trials; t++) {
  await runOnce(t);
  await check();
  stats.trials++;
  if (!args.quiet && (t + 1) % Math.max(1, Math.floor(trials / 20)) === 0) {
    process.stdout.write(`  ${t + 1}/${trials} trials, ${stats.sealed} calls sealed, ${acked.size} messages and ${events.size} events acknowledged, seq ${stats.maxSeq}\n`);
  }
}
const secs = (performance.now() - t0) / 1000;
console.log(`reliability: ${stats.trials} kills (SIGKILL) and crash resumes in ${secs.toFixed(0)} s — every check passed`);
console.log(`  kill moments: ${Object.entries(stats.killsAt).map(([k, v]) => `${k} ${v}`).join(', ')}`);
console.log(`  sealed calls: ${stats.sealed} (${Object.entries(stats.sealedByState).map(([k, v]) => `${k} ${v}`).join(', ')})`);
console.log(`  acknowledged: ${stats.ackedMessages} messages, ${stats.ackedEvents} events; last seq ${stats.maxSeq}, none repeated`);
if (!args.dir) rmSync(dir, { recursive: true, force: true });
