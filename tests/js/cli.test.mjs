// The `forkpoint` command on a real store: a crashed agent, checkpoints, forks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { napi, realDir } from './helpers.mjs';

const { Agent, JSONStore, ToolRegistry, ScriptedProvider } = napi;
const require = createRequire(import.meta.url);
const bin = fileURLToPath(new URL('../../npm/forkpoint/bin/forkpoint.mjs', import.meta.url));
const child = fileURLToPath(new URL('./agent-child.mjs', import.meta.url));
const { main } = require('../../npm/forkpoint/dist/cli.js');

const run = (dir, ...args) => {
  const r = spawnSync(process.execPath, [bin, '--store', dir, ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};

async function storeWithCheckpoints() {
  const store = new JSONStore(mkdtempSync(join(tmpdir(), 'fp-cli-')));
  const toolRegistry = new ToolRegistry();
  const agent = await Agent.create({ agentId: 'wf', model: new ScriptedProvider([{ text: 'a1' }, { text: 'a2' }, { text: 'a3' }]), tools: [] }, { store, toolRegistry });
  await agent.chat('q1');
  await agent.checkpoints.create({ executionId: 'exec-1', stepName: 'plan', stepIndex: 0, variables: { v: 1 } });
  await agent.chat('q2');
  await agent.checkpoints.create({ executionId: 'exec-1', stepName: 'build', stepIndex: 1 });
  await agent.checkpoints.create({ executionId: 'exec-2', stepName: 'other', stepIndex: 0 });
  await agent.chat('q3');
  await agent.snapshot('mid');
  await agent.close();
  return store;
}

test('list, show and events on a crashed agent; errors carry their code', async () => {
  const store = new JSONStore(mkdtempSync(join(tmpdir(), 'fp-cli-')));
  await new Promise((resolve) => {
    const p = spawn(process.execPath, [child, store.dir, 'crashed', 'run'], { stdio: ['ignore', 'pipe', 'inherit'] });
    p.stdout.on('data', (d) => String(d).includes('TOOL_RUNNING') && p.kill('SIGKILL'));
    p.on('exit', resolve);
  });
  const l = run(store.dir, 'list', '--json');
  assert.equal(l.code, 0, l.err);
  assert.deepEqual(JSON.parse(l.out).map((a) => a.agentId), ['crashed']);
  const s = run(store.dir, 'show', 'crashed');
  assert.equal(s.code, 0, s.err);
  assert.match(s.out, /breakpoint {2}TOOL_EXECUTING/);
  assert.match(s.out, /call_slow_1 slow EXECUTING/);
  const sj = JSON.parse(run(store.dir, 'show', 'crashed', '--json').out);
  assert.equal(sj.openCalls[0].state, 'EXECUTING');
  assert.ok(sj.tree.length >= 1);
  const e = run(store.dir, 'events', 'crashed', '--since', '3', '--json');
  assert.equal(e.code, 0, e.err);
  const evs = e.out.trim().split('\n').map((x) => JSON.parse(x));
  assert.equal(evs[0].seq, 4);
  assert.equal(evs.at(-1).type, 'tool:start');
  assert.equal(evs.at(-1).seq, sj.lastBookmark.seq);
  const bad = run(store.dir, 'show', '../etc');
  assert.equal(bad.code, 1);
  assert.match(bad.err, /INVALID_ID/);
  assert.match(run(store.dir, 'show', 'missing').err, /AGENT_NOT_FOUND/);
  // show reads without the lock: the agent can be resumed while someone looks.
  const a = await Agent.resume('crashed', { model: new ScriptedProvider([]) }, { store, toolRegistry: new ToolRegistry() }, { strategy: 'crash' });
  const s2 = run(store.dir, 'show', 'crashed');
  assert.match(s2.out, /open tool calls: none/);
  assert.match(s2.out, /SEALED/);
  assert.match(run(store.dir, 'fork', 'crashed').err, /AGENT_LOCKED/);
  await a.close();
});

test('show on the store the 0.1.0 Node Agent wrote (read without a lease, nothing written)', () => {
  const fixture = fileURLToPath(new URL('../fixtures/agent-store-0.1.0-node/store/', import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'fp-cli-old-'));
  cpSync(fixture, dir, { recursive: true });
  const before = readFileSync(join(dir, 'crashed-bot', 'events.jsonl'));
  const s = run(dir, 'show', 'crashed-bot');
  assert.equal(s.code, 0, s.err);
  assert.match(s.out, /breakpoint {2}TOOL_EXECUTING/);
  assert.match(s.out, /call_slow_1 slow EXECUTING/);
  const j = JSON.parse(run(dir, 'show', 'fixture-bot', '--json').out);
  assert.equal(j.breakpoint, 'AWAITING_APPROVAL');
  assert.deepEqual(j.openCalls.map((c) => [c.id, c.state]), [['call_danger_1', 'APPROVAL_REQUIRED']]);
  assert.deepEqual(j.toolCalls.map((c) => [c.id, c.state]), [['call_echo_1', 'COMPLETED'], ['call_danger_1', 'APPROVAL_REQUIRED']]);
  assert.equal(j.checkpoints[0].checkpoints[0].id, 'ckpt-run-1-1');
  assert.ok(j.snapshots.some((x) => x.id === 'after-echo'));
  assert.equal(j.lastBookmark.seq, JSON.parse(readFileSync(join(dir, 'fixture-bot', 'events.jsonl'), 'utf8').trim().split('\n').at(-1)).seq);
  assert.ok(j.tree.length >= 1);
  assert.deepEqual(readFileSync(join(dir, 'crashed-bot', 'events.jsonl')), before);
});

test('checkpoint (rewind, restore): --json lists grouped, --select restores for real, the prompt offers (current) first', async () => {
  const store = await storeWithCheckpoints();
  const j = run(store.dir, 'checkpoint', 'wf', '--json');
  assert.deepEqual(JSON.parse(j.out).map((g) => [g.executionId, g.checkpoints.map((c) => c.id)]), [['exec-1', ['ckpt-exec-1-0', 'ckpt-exec-1-1']], ['exec-2', ['ckpt-exec-2-0']]]);
  const r = run(store.dir, 'rewind', 'wf', '--select', 'ckpt-exec-1-0');
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /Restored ckpt-exec-1-0/);
  const again = await Agent.resume('wf', { model: new ScriptedProvider([]) }, { store, toolRegistry: new ToolRegistry() });
  assert.deepEqual((await again.messages()).map((m) => m.role), ['user', 'assistant']);
  await again.close();
  assert.match(run(store.dir, 'restore', 'wf', '--select', 'ckpt-nope-0').err, /NOT_FOUND/);
  assert.match(run(store.dir, 'checkpoint', 'wf').err, /not a terminal/);
  // The selector's choices, as the prompt receives them.
  let seen;
  const lines = [];
  await main(['node', 'forkpoint', '--store', store.dir, 'checkpoint', 'wf'], {
    interactive: true,
    out: (s) => lines.push(s),
    select: async (o) => {
      seen = o.choices;
      return 'ckpt-exec-1-1';
    },
  });
  assert.equal(seen[0].name, '(current)');
  assert.deepEqual(seen.filter((c) => c.type === 'separator').map((c) => c.separator), ['── exec-1', '── exec-2']);
  assert.deepEqual(seen.filter((c) => c.value?.startsWith('ckpt')).map((c) => c.value), ['ckpt-exec-1-0', 'ckpt-exec-1-1', 'ckpt-exec-2-0']);
  assert.match(lines.join('\n'), /Restored ckpt-exec-1-1/);
  const b = await Agent.resume('wf', { model: new ScriptedProvider([]) }, { store, toolRegistry: new ToolRegistry() });
  assert.equal((await b.messages()).length, 4);
  await b.close();
  await main(['node', 'forkpoint', '--store', store.dir, 'checkpoint', 'wf'], { interactive: true, out: (s) => lines.push(s), select: async () => '__current__' });
  assert.equal(lines.at(-1), 'Exited checkpoint selection.');
});

test('fork --at and inspect of a real session file', async () => {
  const store = await storeWithCheckpoints();
  const f = run(store.dir, 'fork', 'wf', '--at', 'mid', '--json');
  assert.equal(f.code, 0, f.err);
  const info = JSON.parse(f.out);
  assert.deepEqual(info.lineage, ['wf']);
  assert.equal(info.messageCount, 6);
  assert.equal(readdirSync(store.dir).length, 2);
  assert.match(run(store.dir, 'fork', 'wf', '--at', 'nope').err, /SNAPSHOT_NOT_FOUND/);
  const file = readdirSync(realDir).find((n) => n.endsWith('.jsonl') && !n.includes('claude'));
  const i = run(store.dir, 'inspect', join(realDir, file), '--json');
  assert.equal(i.code, 0, i.err);
  assert.ok(JSON.parse(i.out).metadata.entryCount > 0);
});

test('the interactive selector in a real terminal (a pty through script(1)): arrow down, Enter restores', async (t) => {
  if (spawnSync('script', ['--version']).status !== 0) return t.skip('script(1) is not installed');
  const store = await storeWithCheckpoints();
  const out = await new Promise((resolve, reject) => {
    const p = spawn('script', ['-qfec', `${process.execPath} ${bin} --store ${store.dir} checkpoint wf`, '/dev/null'], { stdio: ['pipe', 'pipe', 'inherit'] });
    let text = '';
    let sent = false;
    p.stdout.on('data', (d) => {
      text += d;
      if (!sent && text.includes('Checkpoints of wf')) {
        sent = true;
        setTimeout(() => p.stdin.write('\x1b[B\x1b[B'), 100); // (current) → step 0 → step 1 (the separator is skipped)
        setTimeout(() => p.stdin.write('\r'), 300);
      }
    });
    const timer = setTimeout(() => p.kill(), 10000);
    p.on('exit', (code) => {
      clearTimeout(timer);
      code === 0 ? resolve(text.replace(/\x1b\[[0-9;?]*[a-zA-Z]/g, '')) : reject(new Error(`exit ${code}: ${text}`));
    });
  });
  assert.match(out, /\(current\)/);
  assert.match(out, /Restored ckpt-exec-1-1/);
  const a = await Agent.resume('wf', { model: new ScriptedProvider([]) }, { store, toolRegistry: new ToolRegistry() });
  assert.equal((await a.messages()).length, 4);
  await a.close();
});

test('inspect and import take --max-file-bytes: a file past it is LIMIT_EXCEEDED before it is read, naming the file; at it, read', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fp-cli-'));
  const file = join(dir, 's.jsonl');
  writeFileSync(file, '{"type":"session","version":3,"id":"s-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n');
  const n = String(readFileSync(file).length);
  for (const cmd of [['inspect'], ['import', '--dir', dir]]) {
    const r = run(dir, ...cmd, file, '--max-file-bytes', String(Number(n) - 1));
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, new RegExp(`^forkpoint: LIMIT_EXCEEDED: .*maxFileBytes.* \\(${file.replace(/[.]/g, '\\.')}\\)\n$`));
    const ok = run(dir, ...cmd, file, '--max-file-bytes', n);
    assert.equal(ok.code, 0, ok.err);
  }
  assert.equal(run(dir, 'inspect', file, '--max-file-bytes', '1e9').code, 2, 'a usage error: a byte count, not a number in another form');
});

test('errors print where they are: path, line and byte offset when the error has them', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fp-cli-'));
  const file = join(dir, 'bad.jsonl');
  writeFileSync(file, readFileSync(fileURLToPath(new URL('../fixtures/corrupt-middle.jsonl', import.meta.url))));
  const r = run(dir, 'inspect', file);
  assert.equal(r.code, 1);
  assert.match(r.err, new RegExp(`^forkpoint: CORRUPTED_DATA: .+ \\(${file.replace(/[.]/g, '\\.')}:3:316\\)\n$`));
  const { formatError } = require('../../npm/forkpoint/dist/cli.js');
  const e = (info) => new napi.ForkpointError({ message: 'm', ...info });
  assert.equal(formatError(e({ code: 'CORRUPTED_DATA', path: '/a.jsonl', line: 7, offset: 99 })), 'forkpoint: CORRUPTED_DATA: m (/a.jsonl:7:99)');
  assert.equal(formatError(e({ code: 'CORRUPTED_DATA', line: 7, offset: 99 })), 'forkpoint: CORRUPTED_DATA: m (line 7, byte offset 99)');
  assert.equal(formatError(e({ code: 'IO', path: '/a.jsonl', offset: 5 })), 'forkpoint: IO: m (/a.jsonl, byte offset 5)');
  assert.equal(formatError(e({ code: 'ALREADY_EXISTS', path: '/a.jsonl' })), 'forkpoint: ALREADY_EXISTS: m (/a.jsonl)');
  assert.equal(formatError(e({ code: 'INVALID_INPUT' })), 'forkpoint: INVALID_INPUT: m');
  assert.equal(formatError(e({ code: 'CORRUPTED_DATA', path: '/a.jsonl', line: 7 })), 'forkpoint: CORRUPTED_DATA: m (/a.jsonl:7)');
  assert.equal(formatError(new Error('plain')), 'forkpoint: plain');
  // Node's own file-system errors: forkpoint's code, the message once, the path in the parentheses.
  let enoent;
  try {
    readFileSync(join(dir, 'nope.jsonl'));
  } catch (x) {
    enoent = x;
  }
  assert.equal(formatError(enoent), `forkpoint: NOT_FOUND: no such file or directory (${join(dir, 'nope.jsonl')})`);
});
