// The main demo: an agent is killed (SIGKILL) in the middle of a slow tool,
// comes back with `strategy: 'crash'`, sees its interrupted call sealed with a
// recommendation, finishes the task; then a fork takes another way, and the
// event stream is replayed from a bookmark. Embedded JSONStore, fresh directory.
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Agent, JSONStore, EventLog, SessionLoader, ToolRegistry, createProvider } = require('forkpoint');
const { deps, model } = require('./demo-agent-setup.cjs');

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = join(root, '.tmp/demo/store');
const bold = (s) => `\x1b[1m${s}\x1b[0m`;
const dim = (s) => `\x1b[2m${s}\x1b[0m`;
const red = (s) => `\x1b[31m${s}\x1b[0m`;
const fail = (why) => {
  console.error(red(`demo failed: ${why}`));
  process.exit(1);
};
const snippet = (m) => {
  if (m.role === 'toolResult') return `${m.toolName} → ${m.content[0].text.slice(0, 90)}`;
  const c = typeof m.content === 'string' ? m.content : m.content.map((b) => b.text ?? (b.thinking ? `(thinking: ${b.thinking})` : `[${b.name}(${JSON.stringify(b.arguments)})]`)).join(' ');
  return c.replace(/\s+/g, ' ').slice(0, 110);
};

rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });

console.log(bold('\n1. An agent works through a task in a child process') + dim(` (store: ${dir})`));
const killedAt = await new Promise((resolve, reject) => {
  const child = spawn(process.execPath, [join(root, 'scripts/demo-agent-child.mjs'), dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, DEMO_SLOW_TOOL: '1' },
  });
  let buf = '';
  let killing = false;
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const [what, json] = [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)];
      const e = JSON.parse(json);
      if (what === 'TEXT') console.log(`   ${dim(`seq ${e.seq}`)} model: ${e.text}`);
      if (what === 'TOOL_START') console.log(`   ${dim(`seq ${e.seq}`)} tool:start ${e.name}`);
      if (what === 'TOOL_END') console.log(`   ${dim(`seq ${e.seq}`)} tool:end   ${e.name}`);
      if (what === 'TOOL_START' && e.name === 'run_migration' && !killing) {
        killing = true;
        setTimeout(() => {
          console.log(red(`   ✗ SIGKILL to pid ${child.pid} while run_migration runs`));
          child.kill('SIGKILL');
        }, 700);
      }
    }
  });
  child.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve(signal) : reject(new Error(`the child exited with ${code}`))));
});
void killedAt;

console.log(bold('\n2. What the store kept') + dim(' (every state was durable before the step it announces)'));
const store = new JSONStore(dir);
const log = await EventLog.open(join(dir, 'migrator', 'events.jsonl'), { readOnly: true });
const before = await log.lastBookmark();
const lastEvents = await log.readSince(before.seq - 3);
await log.close();
console.log(`   agents: ${store.list().map((m) => m.agentId).join(', ')}; last bookmark seq ${before.seq}`);
for (const e of lastEvents) console.log(dim(`   seq ${e.seq} ${e.channel}/${e.type} ${e.type === 'breakpoint_changed' ? `${e.previous} → ${e.current}` : ''}`));

console.log(bold("\n3. Agent.resume(id, config, deps, { strategy: 'crash' })"));
const t0 = performance.now();
const agent = await Agent.resume('migrator', { model: model('resumed') }, deps(store), { strategy: 'crash' });
const resumeMs = performance.now() - t0;
const sealedCalls = (await agent.toolCalls()).filter((c) => c.state === 'SEALED');
const sealedMsg = (await agent.messages()).findLast((m) => m.role === 'toolResult');
const payload = JSON.parse(sealedMsg.content[0].text);
console.log(`   resumed in ${resumeMs.toFixed(1)} ms; sealed ${sealedCalls.length} call: ${sealedCalls.map((c) => `${c.name} (${c.id}) ${c.audit.map((a) => a.state).join(' → ')}`).join(', ')}`);
console.log(`   its tool_result (is_error): "${payload.error}"`);
for (const r of payload.recommendations) console.log(`     • ${r}`);
const info = await agent.info();
console.log(`   info: ${info.messageCount} messages, lastSfpIndex ${info.lastSfpIndex}, lastBookmark seq ${info.lastBookmark.seq} (> ${before.seq}), breakpoint ${info.breakpoint}`);
if (sealedCalls.length !== 1 || sealedCalls[0].name !== 'run_migration') fail('the interrupted call was not sealed');
if (info.lastBookmark.seq <= before.seq) fail('bookmarks did not continue');

console.log(bold('\n4. Snapshot, then finish the task'));
const snap = await agent.snapshot('after-crash');
const done = await agent.chat('Please finish the migration safely.');
console.log(`   snapshot '${snap}'; chat → ${done.status}: "${done.text}"`);
for (const c of (await agent.toolCalls()).slice(-2)) console.log(dim(`   ${c.name} ${c.state} ${JSON.stringify(c.result ?? '')}`));
if (!done.text.includes('complete')) fail('the task did not finish');

console.log(bold("\n5. Fork from 'after-crash' and take another way") + dim(' (a sibling in the store, lineage kept)'));
const forked = await agent.fork('after-crash');
const forkId = forked.agentId;
await forked.close();
const fork = await Agent.resume(forkId, { model: model('fork') }, deps(store));
const fr = await fork.chat('Actually, roll the migration back instead.');
const fi = await fork.info();
console.log(`   ${forkId}: lineage [${fi.lineage.join(', ')}]; chat → "${fr.text}"`);
if (fi.lineage[0] !== 'migrator' || !fr.text.includes('Rolled back')) fail('the fork did not go its own way');

console.log(bold('\n6. The store and the conversations'));
for (const m of store.list()) console.log(`   ${m.agentId.padEnd(34)} lineage [${(m.lineage ?? []).join(', ')}]  model ${m.model.provider}/${m.model.model}`);
for (const [name, a] of [['migrator', agent], [forkId, fork]]) {
  console.log(`   ${bold(name)}`);
  for (const m of await a.messages()) console.log(`     ${m.role.padEnd(10)} ${snippet(m)}`);
}
const s = await SessionLoader.open(join(dir, 'migrator', 'session.jsonl'));
const md = s.getMetadata();
console.log(dim(`   migrator/session.jsonl: ${md.entryCount} entries (messages and forkpoint.* records), pi v3, leaf ${md.leafId}`));

console.log(bold(`\n7. Replay the events since the bookmark before the crash (seq ${before.seq})`) + dim(' (from storage, then live; exactly once, in order)'));
const last = (await agent.info()).lastBookmark.seq;
const seen = [];
for await (const { bookmark, event } of agent.subscribe(undefined, { since: before })) {
  seen.push(event);
  if (bookmark.seq >= last) break;
}
const shown = seen.filter((e) => !['breakpoint_changed', 'text_chunk_start', 'text_chunk_end', 'think_chunk_start', 'think_chunk_end', 'token_usage'].includes(e.type));
for (const e of shown) {
  const extra = e.type === 'agent_resumed' ? ` strategy=${e.strategy} sealed=${e.sealed.map((c) => c.name)} breakpoint at crash=${e.breakpoint}` : e.call ? ` ${e.call.name} ${e.call.state}` : e.delta ? ` "${e.delta.slice(0, 60)}"` : e.state ? ` ${e.state}` : '';
  console.log(`   ${dim(`seq ${String(e.seq).padStart(3)}`)} ${e.channel.padEnd(8)} ${e.type}${extra}`);
}
console.log(dim(`   (${seen.length - shown.length} breakpoint/chunk/usage events not shown)`));
if (!seen.every((e, i) => e.seq === before.seq + 1 + i)) fail('the replay skipped or repeated an event');
await agent.close();
await fork.close();

// 8. A real wire format: the model streams, every piece is durable as it comes.
const real = process.env.ANTHROPIC_API_KEY;
console.log(
  bold('\n8. Streaming from a model: Anthropic Messages') +
    dim(real ? ' (the real API: ANTHROPIC_API_KEY is set)' : ' (a local server speaking the API byte for byte; set ANTHROPIC_API_KEY for the real one)'),
);
let srv = null;
if (!real) {
  const { startProviderServer } = await import('../tests/js/providers/server.mjs');
  const story = 'Durable streaming means every token you saw is on disk: kill the process now, and the resume tells you exactly what had streamed.';
  srv = await startProviderServer({
    provider: 'anthropic',
    script: [
      {
        turn: { thinking: { text: 'A short answer about durability.', signature: 'ZGVtby1zaWduYXR1cmU=' }, text: story, usage: { input: 412, output: 61, cacheRead: 300 } },
        opts: { pieces: { text: 24, thinking: 3 } },
        paceMs: 15,
      },
    ],
  });
}
const streamer = await Agent.create(
  { agentId: 'streamer', model: createProvider({ provider: 'anthropic', model: 'claude-sonnet-4-5', maxTokens: 300, ...(srv ? { baseURL: srv.url, apiKey: 'sk-demo' } : {}) }) },
  { store, toolRegistry: new ToolRegistry() },
);
let pieces = 0;
process.stdout.write('   ');
streamer.on('text_chunk', (e) => {
  pieces++;
  process.stdout.write(e.delta);
});
const answer = await streamer.chat('In one sentence: what does durable streaming mean?');
console.log('');
const usage = (await streamer.info()).usage;
console.log(dim(`   ${pieces} pieces, each an event written before it was shown; usage: ${usage.input} in (+${usage.cacheRead} cached), ${usage.output} out, $${usage.cost.toFixed(6)}`));
if (!answer.text || pieces < 2) fail('the answer did not stream');
await streamer.close();
await srv?.close();
console.log('');
