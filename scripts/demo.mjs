// The second demo: generate a realistic pi session, resume it lazily, show its metadata,
// its branch tree and the context from the leaf, then move the leaf to another
// branch with SessionWriter.moveLeaf and show that a fresh load resumes there.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { SessionLoader, SessionWriter, loadSessionLazy, listSessions, EventLog, EventBus, importSession, SessionMigrator } = require('forkpoint');

const root = fileURLToPath(new URL('..', import.meta.url));
const gen = join(root, '../shared/tools/gen-session.mjs');
const dir = join(root, '.tmp/demo');
const mb = Number(process.env.DEMO_MB ?? 64);
const path = join(dir, `session-${mb}mb.jsonl`);

const bold = (s) => `\x1b[1m${s}\x1b[0m`;
const dim = (s) => `\x1b[2m${s}\x1b[0m`;
const ms = (t) => `${t.toFixed(t < 10 ? 2 : 0)} ms`;
const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const time = async (f) => {
  const t0 = performance.now();
  const r = await f();
  return [r, performance.now() - t0];
};
const snippet = (m) => {
  const c = m.content ?? m.summary ?? '';
  const text = typeof c === 'string' ? c : c.map((b) => b.text ?? b.thinking ?? (b.name ? `[${b.name}]` : '')).join(' ');
  return text.replace(/\s+/g, ' ').slice(0, 70);
};

rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
console.log(bold(`\n1. Generate a ${mb} MiB pi session`) + dim(' (shared/tools/gen-session.mjs: branches, compactions as a real agent does)'));
const stats = JSON.parse(
  execFileSync(process.execPath, [gen, '--out', path, '--mb', String(mb), '--branches', '5', '--compact-every-kb', '800', '--seed', 'demo', '--stats'], { encoding: 'utf8' }),
);
console.log(`   ${path}\n   ${mib(stats.bytes)}, ${stats.entries} entries, ${stats.compactions} compactions, ${stats.branchPoints} branch points`);

console.log(bold('\n2. Resume it lazily') + dim(' (reads the tail the context needs, not the file)'));
const [lazy1, t1] = await time(() => loadSessionLazy(path));
const m1 = lazy1.getMetadata();
console.log(`   first resume:  ${ms(t1)}  mode=${m1.mode}  read ${mib(m1.bytesRead)} of ${mib(m1.fileSize)}  (wrote the resume hint: ${m1.hintWritten})`);
const [lazy, t2] = await time(() => loadSessionLazy(path));
const m = lazy.getMetadata();
console.log(`   next resume:   ${ms(t2)}  mode=${m.mode}  read ${mib(m.bytesRead)}`);
console.log(`   session ${m.sessionId}  cwd ${m.cwd}  created ${m.createdAt}`);
console.log(`   leaf ${m.leafId}, newest compaction on its path ${m.compactionId}, context ${m.contextMessages} messages`);

console.log(bold('\n3. The branch tree') + dim(' (full load; linear runs collapsed)'));
const [full, t3] = await time(() => SessionLoader.open(path));
const fm = full.getMetadata();
console.log(dim(`   full load + index: ${ms(t3)}; ${fm.entryCount} entries, ${fm.messageCount} messages, ${fm.leafCount} leaves, ${fm.branchPoints} branch points, first ${fm.firstTimestamp}, last ${fm.lastTimestamp}`));
const runs = full.getBranch().getTree();
const print = (i, prefix, last) => {
  const r = runs[i];
  const tag = [
    r.current ? bold('← current leaf') : '',
    r.compactions ? `${r.compactions} compaction${r.compactions > 1 ? 's' : ''}` : '',
    r.labels.length ? `labels: ${[...new Set(r.labels.map((l) => l.label))].slice(0, 3).join(', ')}` : '',
  ].filter(Boolean).join('  ');
  const kind = r.children.length > 1 ? 'branch point' : r.children.length === 0 ? 'leaf' : '';
  console.log(`   ${prefix}${last ? '└─' : '├─'} ${r.entries} entries ${r.firstId}…${r.lastId} ${dim('line ' + r.firstLine)} ${kind} ${tag}`);
  r.children.forEach((c, k) => print(c, prefix + (last ? '   ' : '│  '), k === r.children.length - 1));
};
runs.forEach((r, i) => r.parent === null && print(i, '', true));

console.log(bold('\n4. The context from the leaf') + dim(' (exactly what pi would send)'));
const ctx = lazy.getSessionContext();
const bytes = Buffer.byteLength(JSON.stringify(ctx.messages));
console.log(`   ${ctx.messages.length} messages, ${mib(bytes)} of JSON, thinking level ${ctx.thinkingLevel}, model ${ctx.model?.provider}/${ctx.model?.modelId}`);
for (const msg of [ctx.messages[0], ...ctx.messages.slice(-3)]) console.log(dim(`   ${msg.role.padEnd(17)} ${snippet(msg)}`));
const same = JSON.stringify(ctx) === JSON.stringify(full.getSessionContext());
console.log(`   lazy context equals the full load's: ${same}`);

console.log(bold('\n4b. The same context as a request for each provider') + dim(' (converted natively; every step reported)'));
for (const target of ['anthropic', 'openai', 'openai-responses', 'google']) {
  const [conv, tc] = await time(() => full.toProvider(target));
  const counts = {};
  for (const st of conv.report.steps) counts[st.code] = (counts[st.code] ?? 0) + 1;
  const summary = Object.entries(counts).map(([c, n]) => `${c} ×${n}`).join(', ') || 'nothing changed';
  console.log(`   ${target.padEnd(17)} ${mib(conv.body.length)} body in ${ms(tc)}; ${summary}`);
}
const cc = join(root, '../shared/fixtures/real/marot-spotter_subagent.jsonl');
const imported = await importSession(cc, { to: join(dir, 'claude-code.forkpoint.jsonl') });
const ccs = await SessionLoader.open(imported.path);
const g = ccs.toProvider('google', { model: 'gemini-3-pro' });
console.log(`   a real Claude Code session imported: ${imported.summary.messages} messages, ${imported.summary.customEntries} metadata lines kept as custom entries, ${ccs.getBranch().getLeaves().length} leaves`);
console.log(`   → Gemini 3: ${g.request.contents.length} contents; steps: ${[...new Set(g.report.steps.map((x) => x.code))].join(', ') || 'none'}; back to Anthropic lossless: ${ccs.toProvider('anthropic').report.compatible}`);
const migrated = await SessionMigrator.migrate(imported.path, 'anthropic', 'openai', join(dir, 'claude-code.openai.jsonl'));
console.log(`   migrated to OpenAI (a new file, written atomically): ${migrated.messagesChanged} messages rewritten, tree kept`);

console.log(bold('\n5. Move the leaf to another branch') + dim(' (SessionWriter.moveLeaf appends a durable leaf entry)'));
const other = full.getBranch().getLeaves().filter((n) => n.id !== fm.leafId).sort((a, b) => b.line - a.line)[0];
const writer = await SessionWriter.open(path);
const [, t5] = await time(() => writer.moveLeaf(other.id));
await writer.close();
console.log(`   moved to ${other.id} (line ${other.line}, a ${other.type} on a side branch) in ${ms(t5)}, fsynced`);
const [again, t6] = await time(() => loadSessionLazy(path));
const am = again.getMetadata();
const actx = again.getContext();
console.log(`   fresh lazy load: ${ms(t6)}  leaf=${am.leafId}  context ${actx.length} messages, last: ${actx.at(-1)?.role} "${snippet(actx.at(-1) ?? {})}"`);
const check = await SessionLoader.open(path);
console.log(`   a full load agrees: leaf=${check.leafId}, same context: ${JSON.stringify(check.getContext()) === JSON.stringify(actx)}`);
if (am.leafId !== other.id || check.leafId !== other.id) {
  console.error('demo failed: the leaf did not move');
  process.exit(1);
}

console.log(bold('\n6. Listing the directory') + dim(' (header and tail of each file only)'));
for (const info of await listSessions(dir)) {
  console.log(`   ${info.path.split('/').pop()}  id ${info.id}  leaf ${info.leafId}  ${mib(info.fileSize)}  entries ${info.entryCount ?? '?'}`);
}

console.log(bold('\n7. The event log') + dim(' (group commit; replay since a bookmark, then live, exactly once)'));
mkdirSync(join(dir, 'events'), { recursive: true });
const evPath = join(dir, 'events', 'agent.events.jsonl');
rmSync(evPath, { force: true });
rmSync(`${evPath}.idx.json`, { force: true });
const log = await EventLog.open(evPath, { durability: 'group' });
const bus = new EventBus(log);
const n = 20000;
const [marks, t7] = await time(() =>
  Promise.all(Array.from({ length: n }, (_, i) => bus.emit(i % 50 === 49 ? { type: 'token_usage', step: i >> 6, input: 1200, output: 80 } : { type: 'text_chunk', step: i >> 6, delta: `token ${i} ` }))),
);
console.log(`   ${n} events emitted and fsynced in ${ms(t7)} (${Math.round((n / t7) * 1000).toLocaleString('en')} events/s), seq ${marks[0].seq}…${marks.at(-1).seq}`);
const bookmark = marks[n - 101];
const seen = [];
const [, t8] = await time(async () => {
  const follow = (async () => {
    for await (const { event } of bus.subscribe({ since: bookmark })) {
      seen.push(event.seq);
      if (event.type === 'done') break;
    }
  })();
  await bus.emit({ type: 'tool:end', call: { id: 'toolu_demo', name: 'bash' } });
  await bus.emit({ type: 'done', step: n >> 6, reason: 'completed' });
  await follow;
});
const inOrder = seen.every((s, i) => s === bookmark.seq + 1 + i);
console.log(`   subscribe({since: seq ${bookmark.seq}}): ${seen.length} events (100 of history, 2 live) in ${ms(t8)}, each once and in order: ${inOrder}`);
await log.close();
const reopened = await EventLog.open(evPath, { readOnly: true });
const last = await reopened.lastBookmark();
const tail = await reopened.readSince(last.seq - 3, { channels: ['progress'] });
console.log(`   reopened read-only: last bookmark seq ${last.seq}; readSince(${last.seq - 3}, progress): ${tail.map((e) => e.type).join(', ')}`);
await reopened.close();
if (!inOrder || seen.length !== 102 || last.seq !== n + 2) {
  console.error('demo failed: the event log did not replay as expected');
  process.exit(1);
}
console.log('');
