/**
 * The `forkpoint` command: look at agents and session files, import and
 * migrate sessions, serve the explorer, replay events, fork, and rewind an
 * agent to a checkpoint. `bin/forkpoint.mjs` calls `main`; the exit codes are
 * in `exitCode`.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { CheckpointInfo, ImportSummary, ProviderName, TreeRun } from '@forkpoint/types';
import { EventBus, ForkpointError, call } from '@forkpoint/shared';
import { Agent, JSONStore, TemplateRegistry, ToolRegistry } from './agent.js';
import type { AgentBytes, AgentTemplate, ModelRef, ModelProvider, StoredAgentMeta } from './agent.js';
import { PostgresStore } from './postgres.js';
import { EventLog } from './eventlog.js';
import { IncrementalSessionLoader, SessionLoader } from './index.js';
import { SessionMigrator, importSession } from './normalize.js';
import { serveExplorer } from './explore.js';
import * as native from '../native/binding.js';

/** The interactive list prompt (`@inquirer/select`, an ES module, passed in by the bin script). */
export type Select = (opts: {
  message: string;
  choices: Array<{ name: string; value: string; description?: string } | { type: 'separator'; separator: string }>;
  pageSize?: number;
}) => Promise<string>;

export interface CliDeps {
  select?: Select;
  separator?: (text: string) => { type: 'separator'; separator: string };
  out?: (s: string) => void;
  /** Whether to prompt (default: stdin is a terminal). */
  interactive?: boolean;
  /** `explore`: called with the server once it listens (default: wait for Ctrl-C, then close it). */
  serving?: (server: { url: string; close(): Promise<void> }) => Promise<void>;
}

/** The package's version (from its package.json). */
export const VERSION: string = (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;

const PROVIDERS: ProviderName[] = ['anthropic', 'openai', 'openai-responses', 'google'];

/** A progress bar on stderr while it is a terminal (else nothing). */
function progressBar(format: string): { update(value: number, total: number): void; stop(): void } {
  if (!process.stderr.isTTY) return { update() {}, stop() {} };
  const bar = new SingleBar({ format, stream: process.stderr, hideCursor: true, clearOnComplete: true }, Presets.shades_classic);
  let started = false;
  return {
    update(value, total) {
      if (!started) bar.start(total, 0);
      started = true;
      bar.setTotal(total);
      bar.update(value);
    },
    stop: () => started && bar.stop(),
  };
}

const MiB = (n: number) => (n / 2 ** 20).toFixed(1);

/** `--max-file-bytes`: a byte count. */
function bytesOption(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('a whole number of bytes');
  return n;
}

/** `maxFileBytes` checked before a file is read (the core decides). */
const checkFileSize = (size: number, limits: { maxFileBytes?: number }, path: string) =>
  call(() => native.checkFileSize(size, JSON.stringify(limits), path));

/** `{base}{suffix}` in `dir`, `base` the file's name without `.jsonl` / `.gz` (and `.forkpoint` when `all`). */
function beside(file: string, dir: string, suffix: string, all = false): string {
  return join(dir, basename(file).replace(all ? /(\.forkpoint)?(\.jsonl)?(\.gz)?$/ : /(\.jsonl)?(\.gz)?$/, '') + suffix);
}

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const dim = (s: string) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);

/** A provider for opening an agent from the CLI: it never calls a model. */
function offline(ref: ModelRef): ModelProvider {
  return {
    ...ref,
    complete: async () => {
      throw new ForkpointError({ code: 'INVALID_INPUT', message: 'the forkpoint CLI does not call models' });
    },
  };
}

/** The CLI runs no template's prompt or tools: any template id is accepted. */
class AnyTemplate extends TemplateRegistry {
  override get(id: string): AgentTemplate {
    return { id };
  }
}

/** A store the CLI works on: a `JSONStore` directory or PostgreSQL. */
export type AnyStore = JSONStore | PostgresStore;

/** Whether `target` names a PostgreSQL store (a `postgres://` or `postgresql://` URL). */
const isPostgres = (target: string) => /^postgres(ql)?:\/\//i.test(target);

/** The URL without its password, for messages. */
const shown = (target: string) => (isPostgres(target) ? target.replace(/^([a-z]+:\/\/[^:@/]*):[^@/]*@/i, '$1:***@') : target);

/**
 * Opens the store `target` names: a PostgreSQL URL (`schema`: its tables'
 * schema, default `forkpoint`), else a `JSONStore` directory (`mustExist`: a
 * missing one is `NOT_FOUND` rather than an empty store).
 */
async function openStore(target: string, schema: string | undefined, mustExist = false): Promise<AnyStore> {
  if (isPostgres(target)) return PostgresStore.open(target, { schema });
  if (schema !== undefined) throw new ForkpointError({ code: 'INVALID_INPUT', message: `--schema is for a PostgreSQL store, not the directory ${target}` });
  if (mustExist && !existsSync(target)) throw new ForkpointError({ code: 'NOT_FOUND', message: `no store directory ${target}` });
  return new JSONStore(target);
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const sameBytes = (a: AgentBytes, b: AgentBytes) => a.meta.equals(b.meta) && a.session.equals(b.session) && a.events.equals(b.events);
const size = (a: AgentBytes) => a.meta.length + a.session.length + a.events.length;

/** Writes `data` to stdout, resolving once it is handed to the OS (or the pipe closed). */
function writeOut(data: Buffer): Promise<void> {
  return new Promise((done, fail) => {
    if (data.length === 0) return done();
    process.stdout.write(data, (e) => (e && (e as { code?: string }).code !== 'EPIPE' ? fail(e) : done()));
  });
}

const openAgent = (store: AnyStore, id: string) =>
  Agent.resumeFromStore(id, { store, toolRegistry: new ToolRegistry(), templateRegistry: new AnyTemplate(), modelFactory: offline }, { strategy: 'manual' });

interface Inspected {
  meta: StoredAgentMeta;
  breakpoint: string;
  lastBookmark: { seq: number; timestamp: number } | null;
  messageCount: number;
  lastSfpIndex: number;
  leafId: string | null;
  openCalls: Array<{ id: string; name: string; arguments: unknown; state: string | null }>;
  toolCalls: Array<{ id: string; name: string; state: string }>;
  snapshots: Array<{ id: string; entryId: string; sfpIndex: number }>;
  checkpoints: Array<{ executionId: string; checkpoints: CheckpointInfo[] }>;
}

function printTree(runs: TreeRun[], out: (s: string) => void): void {
  const print = (i: number, prefix: string, last: boolean) => {
    const r = runs[i];
    const tags = [
      r.current ? bold('← current leaf') : '',
      r.compactions ? `${r.compactions} compaction(s)` : '',
      r.labels.length ? `labels: ${[...new Set(r.labels.map((l) => l.label))].slice(0, 3).join(', ')}` : '',
      r.children.length > 1 ? 'branch point' : r.children.length === 0 ? 'leaf' : '',
    ].filter(Boolean);
    out(`  ${prefix}${last ? '└─' : '├─'} ${r.entries} entries ${r.firstId}…${r.lastId} ${tags.join('  ')}`);
    r.children.forEach((c, k) => print(c, prefix + (last ? '   ' : '│  '), k === r.children.length - 1));
  };
  const roots = runs.map((r, i) => [r, i] as const).filter(([r]) => r.parent === null);
  const shown = roots.slice(0, 50);
  shown.forEach(([, i], k) => print(i, '', k === shown.length - 1));
  if (roots.length > shown.length) out(dim(`  … ${roots.length - shown.length} more roots`));
}

function summary(e: Record<string, unknown>): string {
  const call = e.call as { name?: string; state?: string } | undefined;
  if (call) return `${call.name ?? ''} ${call.state ?? ''}`;
  if (typeof e.delta === 'string') return JSON.stringify(e.delta.slice(0, 60));
  if (e.type === 'breakpoint_changed') return `${e.previous} → ${e.current}`;
  if (e.type === 'agent_resumed') return `strategy=${e.strategy} sealed=${(e.sealed as unknown[]).length}`;
  if (typeof e.state === 'string') return e.state;
  return '';
}

/** Node's own file-system errors (`ENOENT: no such file or directory, open '/x'`) as forkpoint's codes. */
const NODE_CODES: Record<string, string> = { ENOENT: 'NOT_FOUND', ENOTDIR: 'NOT_FOUND', EACCES: 'IO', EPERM: 'IO', EISDIR: 'INVALID_INPUT', EEXIST: 'ALREADY_EXISTS', ENOSPC: 'STORAGE_FULL' };

/**
 * The line the CLI prints for an error: `forkpoint: CODE: message`, then where
 * it is when the error says so — `(path:line:offset)` with the byte offset, or
 * the parts known: `(path:line)`, `(path)`, `(path, byte offset N)`,
 * `(line N, byte offset M)`. Node's file-system errors get forkpoint's codes
 * (`NOT_FOUND` for a missing file).
 */
export function formatError(e: unknown): string {
  const err = (e ?? {}) as { code?: unknown; message?: unknown; path?: unknown; line?: unknown; offset?: unknown; syscall?: unknown };
  let message = typeof err.message === 'string' ? err.message : String(e);
  let code = typeof err.code === 'string' && err.code ? err.code : null;
  let path = typeof err.path === 'string' && err.path ? err.path : null;
  if (code && typeof err.syscall === 'string') {
    // `ENOENT: no such file or directory, open '/x'` → `NOT_FOUND: no such file or directory (/x)`
    message = message.replace(new RegExp(`^${code}: `), '').replace(/, [a-z]+(?: '[^']*')+$/, '');
    code = NODE_CODES[code] ?? 'IO';
  }
  if (path !== null && message.includes(path)) path = null;
  const line = typeof err.line === 'number' ? err.line : null;
  const offset = typeof err.offset === 'number' ? err.offset : null;
  let where: string | null = null;
  if (path !== null) where = line !== null ? `${path}:${line}${offset !== null ? `:${offset}` : ''}` : offset !== null ? `${path}, byte offset ${offset}` : path;
  else if (line !== null) where = `line ${line}${offset !== null ? `, byte offset ${offset}` : ''}`;
  else if (offset !== null) where = `byte offset ${offset}`;
  const more = typeof (e as { hint?: unknown })?.hint === 'string' ? `\n  hint: ${(e as { hint: string }).hint}` : '';
  return `forkpoint: ${code ? `${code}: ` : ''}${message}${where ? ` (${where})` : ''}${more}`;
}

/** `e`, with a hint printed under it when its code is `code`. */
function hint(e: unknown, code: string, text: string): unknown {
  if ((e as { code?: unknown })?.code === code && e && typeof e === 'object') (e as { hint?: string }).hint = text;
  return e;
}

/**
 * The exit status for an error `main` threw: 2 for a usage error (an unknown
 * command or option, a missing argument), 1 for any other error.
 */
export function exitCode(e: unknown): number {
  if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
  return 1;
}

/** Runs the CLI with `argv` (as `process.argv`). */
export async function main(argv: string[], deps: CliDeps = {}): Promise<void> {
  const out = deps.out ?? ((s: string) => process.stdout.write(s + '\n'));
  const program = new Command();
  program
    .name('forkpoint')
    .description('Look at durable agents and session files; import, migrate and explore sessions; replay events; fork; rewind to a checkpoint.')
    .version(VERSION, '-V, --version', 'the version of forkpoint')
    .option('--store <dir|url>', 'the agent store: a JSONStore directory or a postgres:// URL', process.env.FORKPOINT_STORE ?? '.forkpoint')
    .option('--schema <name>', 'the PostgreSQL schema of the store (default forkpoint)')
    .showHelpAfterError()
    // Usage errors are thrown (exit status 2 in bin/forkpoint.mjs), never exit here.
    .exitOverride();
  const opened: AnyStore[] = [];
  /** The store --store names (opened once; closed when the command ends). */
  let current: Promise<AnyStore> | undefined;
  const store = (): Promise<AnyStore> => {
    const o = program.opts<{ store: string; schema?: string }>();
    current ??= openStore(o.store, o.schema).then((s) => (opened.push(s), s));
    return current;
  };

  program
    .command('list')
    .description('the agents in the store')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => {
      const s = await store();
      const agents = await s.list();
      if (o.json) return out(JSON.stringify(agents, null, 2));
      if (agents.length === 0) return out(dim(`no agents in ${s instanceof JSONStore ? s.dir : `${shown(program.opts<{ store: string }>().store)} (schema ${s.schema})`}`));
      for (const a of agents) {
        const lineage = a.lineage?.length ? ` ${dim('forked from')} ${a.lineage.join(' → ')}` : '';
        out(`${bold(a.agentId)}  ${a.model ? `${a.model.provider}/${a.model.model}` : ''}  ${dim(a.createdAt ?? '')}${lineage}${a.corrupted ? ' CORRUPTED' : ''}`);
      }
    });

  program
    .command('show <id>')
    .description('an agent: breakpoint, open tool calls, lineage, checkpoints, snapshots and its session tree')
    .option('--json', 'machine-readable output')
    .action(async (id: string, o: { json?: boolean }) => {
      const s = await store();
      const info = JSON.parse(await s.inspectJson(id)) as Inspected;
      // An agent's own session is never refused for its size.
      const session =
        s instanceof JSONStore
          ? await SessionLoader.open(join(s.dir, id, 'session.jsonl'), { maxFileBytes: Number.MAX_SAFE_INTEGER })
          : SessionLoader.fromJsonl((await s.exportAgent(id)).session, { maxFileBytes: Number.MAX_SAFE_INTEGER });
      if (o.json) return out(JSON.stringify({ ...info, tree: session.getBranch().getTree() }, null, 2));
      const m = info.meta;
      out(`${bold(id)}  ${m.model ? `${m.model.provider}/${m.model.model}` : ''}  created ${m.createdAt}`);
      out(`  lineage     ${m.lineage?.length ? m.lineage.join(' → ') : dim('(root)')}`);
      out(`  breakpoint  ${info.breakpoint}   last bookmark ${info.lastBookmark ? `seq ${info.lastBookmark.seq}` : '-'}`);
      out(`  messages    ${info.messageCount} on the current branch, last safe-fork-point ${info.lastSfpIndex}`);
      if (info.openCalls.length) {
        out(`  open tool calls (sealed by a crash resume):`);
        for (const c of info.openCalls) out(`    ${c.id} ${c.name} ${c.state ?? 'no record'} ${dim(JSON.stringify(c.arguments).slice(0, 80))}`);
      } else out(`  open tool calls: none`);
      out(`  tool calls  ${info.toolCalls.length} (${[...new Set(info.toolCalls.map((c) => c.state))].join(', ') || '-'})`);
      if (info.snapshots.length) out(`  snapshots   ${info.snapshots.map((x) => x.id).join(', ')}`);
      for (const g of info.checkpoints) out(`  checkpoints ${g.executionId}: ${g.checkpoints.map((c) => `${c.stepIndex}:${c.stepName}(${c.status})`).join(', ')}`);
      out(`  session tree (linear runs collapsed):`);
      printTree(session.getBranch().getTree(), out);
    });

  program
    .command('checkpoint <id>')
    .aliases(['rewind', 'restore'])
    .description('pick a checkpoint and restore the agent to it (the leaf moves there; history is kept)')
    .option('--select <checkpointId>', 'restore this checkpoint without asking')
    .option('--json', 'machine-readable output (the checkpoints, or the restored one)')
    .action(async (id: string, o: { select?: string; json?: boolean }) => {
      const s = await store();
      const info = JSON.parse(await s.inspectJson(id)) as Inspected;
      let choice = o.select;
      if (!choice) {
        if (o.json) return out(JSON.stringify(info.checkpoints, null, 2));
        if (info.checkpoints.length === 0) return out('No checkpoints found.');
        if (!deps.select || !(deps.interactive ?? process.stdin.isTTY)) {
          throw new ForkpointError({ code: 'INVALID_INPUT', message: 'not a terminal: pass --select <checkpointId> (or --json to list them)' });
        }
        const sep = deps.separator ?? ((t: string) => ({ type: 'separator' as const, separator: t }));
        const choices: Parameters<Select>[0]['choices'] = [{ name: '(current)', value: '__current__', description: 'keep the agent where it is' }];
        for (const g of info.checkpoints) {
          choices.push(sep(`── ${g.executionId}`));
          for (const c of g.checkpoints) {
            choices.push({ name: `  step ${c.stepIndex}  ${c.stepName}  ${c.status}`, value: c.id, description: `${c.id}, made ${new Date(c.createdAt).toISOString()}` });
          }
        }
        choice = await deps.select({ message: `Checkpoints of ${id}`, choices, pageSize: 15 });
        if (choice === '__current__') return out('Exited checkpoint selection.');
      }
      const agent = await openAgent(s, id);
      try {
        const cp = await agent.checkpoints.restore(choice);
        const msgs = await agent.messages();
        if (o.json) return out(JSON.stringify({ restored: cp, messageCount: msgs.length }, null, 2));
        out(`Restored ${bold(cp.id)} (${cp.executionId} step ${cp.stepIndex} ${cp.stepName}): the leaf is at ${cp.entryId}, ${msgs.length} messages on the branch.`);
        if (cp.variables) out(`  variables ${JSON.stringify(cp.variables)}`);
      } finally {
        await agent.close();
      }
    });

  program
    .command('events <id>')
    .description("an agent's events after a sequence number; --follow keeps streaming")
    .option('--since <seq>', 'events after this seq (default: all)')
    .option('--follow', 'keep streaming new events (Ctrl-C stops)')
    .option('--json', 'one JSON event per line')
    .action(async (id: string, o: { since?: string; follow?: boolean; json?: boolean }) => {
      call(() => native.NativeStore.validateId(id));
      const s = await store();
      if (!(await s.exists(id))) throw new ForkpointError({ code: 'AGENT_NOT_FOUND', message: `no agent '${id}' in the store` });
      const since = o.since === undefined ? null : Number(o.since);
      if (since !== null && !(Number.isInteger(since) && since >= 0)) throw new ForkpointError({ code: 'INVALID_INPUT', message: '--since takes a whole number' });
      // A PostgreSQL store's agent is followed whoever writes it (on any host).
      const log = s instanceof JSONStore ? await EventLog.open(join(s.dir, id, 'events.jsonl'), { readOnly: true }) : await s.events(id);
      const last = (await log.lastBookmark())?.seq ?? 0;
      let stop = false;
      process.once('SIGINT', () => {
        stop = true;
        void log.close();
      });
      if (o.follow || last > (since ?? -1)) {
        for await (const { event } of new EventBus(log).subscribe({ since })) {
          if (o.json) out(JSON.stringify(event));
          else out(`${dim(`seq ${event.seq}`)} ${event.channel.padEnd(8)} ${event.type} ${summary(event)}`);
          if (stop || (!o.follow && event.seq >= last)) break;
        }
      }
      await log.close();
    });

  program
    .command('fork <id>')
    .description('a new agent (a sibling in the store) from a snapshot of this one')
    .option('--at <snapshot>', "a snapshot id or 'sfp:{index}' (default: the latest safe-fork-point)")
    .option('--json', 'machine-readable output')
    .action(async (id: string, o: { at?: string; json?: boolean }) => {
      const agent = await openAgent(await store(), id);
      try {
        const fork = await agent.fork(o.at);
        const info = await fork.info();
        await fork.close();
        if (o.json) return out(JSON.stringify(info, null, 2));
        out(`Forked ${bold(info.agentId)} from ${id}${o.at ? ` at ${o.at}` : ''}: ${info.messageCount} messages, lineage ${info.lineage.join(' → ')}`);
      } finally {
        await agent.close();
      }
    });

  program
    .command('export <id>')
    .description("an agent's session (session.jsonl, byte for byte) on stdout, from any store; read without taking its lease")
    .addOption(new Option('--part <part>', 'what to write: the session, the events (events.jsonl) or the meta (meta.json)').choices(['session', 'events', 'meta']).default('session'))
    .action(async (id: string, o: { part: 'session' | 'events' | 'meta' }) => {
      const x = await (await store()).exportAgent(id);
      await writeOut(x[o.part]);
    });

  program
    .command('migrate-store')
    .description('copy every agent (meta, session, events byte for byte) between two stores (directories or postgres:// URLs), then verify both sides')
    .requiredOption('--from <dir|url>', 'the store to copy from')
    .requiredOption('--to <dir|url>', 'the store to copy to')
    .option('--from-schema <name>', 'the PostgreSQL schema of --from (default: --schema, else forkpoint)')
    .option('--to-schema <name>', 'the PostgreSQL schema of --to (default: --schema, else forkpoint)')
    .option('--json', 'machine-readable output ({agents, copied, skipped, bytes, verified})')
    .action(async (o: { from: string; to: string; fromSchema?: string; toSchema?: string; json?: boolean }) => {
      const schema = program.opts<{ schema?: string }>().schema;
      const pick = (s: string | undefined, target: string) => s ?? (isPostgres(target) ? schema : undefined);
      const from = await openStore(o.from, pick(o.fromSchema, o.from), true);
      opened.push(from);
      const to = await openStore(o.to, pick(o.toSchema, o.to));
      opened.push(to);
      const r = await migrateStore(from, to);
      if (o.json) return out(JSON.stringify(r, null, 2));
      out(`Copied ${r.copied} agent(s) (${MiB(r.bytes)} MiB) from ${shown(o.from)} to ${shown(o.to)}; ${r.skipped} already there with the same bytes skipped`);
      out(`  verified    ${r.verified} agent(s): meta, session and events identical on both sides (sha256)`);
    });

  program
    .command('inspect <file>')
    .description('any session file (pi v1–v3, forkpoint; .jsonl or .jsonl.gz): metadata and branch tree')
    .option('--json', 'machine-readable output')
    .option('--max-file-bytes <n>', 'the largest file read (default 4 GiB)', bytesOption)
    .action(async (file: string, o: { json?: boolean; maxFileBytes?: number }) => {
      // (A missing file: Node's ENOENT, printed as NOT_FOUND by formatError.)
      const size = statSync(file).size;
      const limits = o.maxFileBytes === undefined ? {} : { maxFileBytes: o.maxFileBytes };
      checkFileSize(size, limits, file);
      // Large plain files: a first pass in batches, with a progress bar.
      if (size > 64 << 20 && !file.endsWith('.gz') && process.stderr.isTTY) {
        const bar = new SingleBar({ format: 'reading {bar} {percentage}% {value}/{total} MiB', stream: process.stderr }, Presets.shades_classic);
        bar.start(Math.ceil(size / 2 ** 20), 0);
        const inc = new IncrementalSessionLoader(file, 20000);
        while (inc.hasMore()) {
          await inc.loadNextBatch();
          bar.update(Math.floor(inc.offset / 2 ** 20));
        }
        bar.stop();
      }
      const s = await SessionLoader.open(file, limits);
      const md = s.getMetadata();
      if (o.json) return out(JSON.stringify({ metadata: md, tree: s.getBranch().getTree() }, null, 2));
      out(`${bold(file)}  ${(size / 2 ** 20).toFixed(1)} MiB`);
      for (const [k, v] of Object.entries(md)) if (v !== null && typeof v !== 'object') out(`  ${k.padEnd(20)} ${v}`);
      out('  tree (linear runs collapsed):');
      printTree(s.getBranch().getTree(), out);
    });

  program
    .command('import <file>')
    .description('a pi (v1–v3), Claude Code or Codex session (.jsonl or .jsonl.gz) → a forkpoint session file; its id is the source\'s own session id, so importing it again is ALREADY_EXISTS')
    .option('--out <path>', 'the file to write (default: {name}.forkpoint.jsonl in --dir)')
    .option('--dir <dir>', 'the folder to write it in', '.')
    .option('--format <format>', 'auto, pi, claude-code or codex', 'auto')
    .option('--copy', 'a copy under a new random id (default file: {name}.copy-{id}.forkpoint.jsonl)')
    .option('--overwrite', 'replace the file if it exists')
    .option('--json', 'machine-readable output ({path, summary})')
    .option('--max-file-bytes <n>', 'the largest file read (default 4 GiB)', bytesOption)
    .action(async (file: string, o: { out?: string; dir: string; format: string; copy?: boolean; overwrite?: boolean; json?: boolean; maxFileBytes?: number }) => {
      const id = o.copy ? randomUUID() : undefined;
      const to = o.out ?? beside(file, o.dir, id ? `.copy-${id.slice(0, 8)}.forkpoint.jsonl` : '.forkpoint.jsonl');
      const bar = progressBar('importing {bar} {percentage}% {value}/{total} MiB');
      let r: { path: string; summary: ImportSummary };
      try {
        r = await importSession(file, {
          to,
          id,
          format: o.format as 'auto',
          overwrite: o.overwrite ?? false,
          ...(o.maxFileBytes === undefined ? {} : { maxFileBytes: o.maxFileBytes }),
          onProgress: (p) => bar.update(Number(MiB(p.bytes)), Number(MiB(p.total))),
        });
      } catch (e) {
        throw hint(e, 'ALREADY_EXISTS', 'imported before: --copy imports it again under a new id, --overwrite replaces the file');
      } finally {
        bar.stop();
      }
      const { path, summary: m } = r;
      if (o.json) return out(JSON.stringify({ path, summary: m }, null, 2));
      out(`Imported ${file} (${m.format}) as session ${bold(m.sessionId)}`);
      out(`  file        ${path}`);
      out(`  entries     ${m.entries} (${m.messages} messages, ${m.customEntries} kept as custom entries)`);
      const notes = [
        m.skippedLines ? `${m.skippedLines} torn last line left out` : '',
        m.orphans ? `${m.orphans} orphans kept as roots` : '',
        m.brokenCycles ? `${m.brokenCycles} parent cycles cut` : '',
        m.rechainedResults ? `${m.rechainedResults} parallel tool results chained` : '',
        m.duplicateIds ? `${m.duplicateIds} repeated uuids kept under derived ids` : '',
      ].filter(Boolean);
      if (notes.length) out(`  repairs     ${notes.join(', ')}`);
      out(dim(`  open it with: forkpoint inspect ${path}`));
    });

  program
    .command('migrate <file>')
    .description('a session file (pi v1–v3 or forkpoint) rewritten so that every message can be sent to another provider')
    .addOption(new Option('--to <provider>', 'the target provider').choices(PROVIDERS).makeOptionMandatory())
    .addOption(new Option('--from <provider>', 'the provider of messages that do not say which wrote them').choices(PROVIDERS).default('anthropic'))
    .option('--model <model>', 'the target model (signatures of other models are not kept)')
    .option('--out <path>', 'the file to write (default: {name}.{provider}.jsonl in the current folder)')
    .option('--overwrite', 'replace the file if it exists')
    .option('--json', 'machine-readable output ({path, report, idMap, messagesChanged, bytesRead})')
    .action(async (file: string, o: { to: string; from: string; model?: string; out?: string; overwrite?: boolean; json?: boolean }) => {
      const to = o.out ?? beside(file, '.', `.${o.to}.jsonl`, true);
      const bar = progressBar('migrating {bar} {percentage}% {value}/{total} MiB');
      let r;
      try {
        r = await SessionMigrator.migrate(file, o.from as ProviderName, o.to as ProviderName, to, {
          model: o.model,
          overwrite: o.overwrite ?? false,
          onProgress: (p) => bar.update(Number(MiB(p.bytesRead)), Number(MiB(p.totalBytes))),
        });
      } catch (e) {
        throw hint(e, 'ALREADY_EXISTS', '--out names another file, --overwrite replaces it');
      } finally {
        bar.stop();
      }
      if (o.json) return out(JSON.stringify({ path: to, ...r }, null, 2));
      out(`Migrated ${file} for ${bold(o.to)} → ${to}`);
      out(`  messages changed  ${r.messagesChanged}, tool-call ids renamed ${Object.keys(r.idMap).length}`);
      out(`  ${r.report.compatible ? 'nothing lost' : 'lost or changed'}${r.report.warnings.length ? ':' : ''}`);
      for (const w of r.report.warnings) out(`    ${w}`);
    });

  program
    .command('explore [file]')
    .description('the session explorer (from the installed forkpoint-web) on 127.0.0.1; with a file, it is imported and opened')
    .option('--port <n>', 'the port (a port in use falls back to a free one; 0: any free port)', '8080')
    .action(async (file: string | undefined, o: { port: string }, cmd: Command) => {
      const port = Number(o.port);
      if (!/^\d+$/.test(o.port) || port > 65535) cmd.error(`error: --port takes a number from 0 to 65535, not '${o.port}'`, { exitCode: 2, code: 'forkpoint.port' });
      const server = await serveExplorer({
        port,
        file,
        onFallback: (p) => process.stderr.write(`port ${port} is in use; using ${p} (sessions imported in the explorer are kept per port)\n`),
      });
      out(`forkpoint session explorer: ${server.url}`);
      if (deps.serving) return deps.serving(server);
      out(dim('(serving the installed forkpoint-web on 127.0.0.1 only; Ctrl-C to stop)'));
      await new Promise<void>((done) => {
        const stop = () => void server.close().then(done);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });

  try {
    await program.parseAsync(argv);
  } catch (e) {
    // --help and --version end here, after printing.
    if (e instanceof CommanderError && e.exitCode === 0) return;
    throw e;
  } finally {
    for (const s of opened) if (s instanceof PostgresStore) await s.close();
  }
}

/** What `migrate-store` did. */
export interface MigrateStoreSummary {
  /** Agents in the source store. */
  agents: number;
  /** Agents created in the target. */
  copied: number;
  /** Agents the target held already, byte for byte the same (left as they were). */
  skipped: number;
  /** Bytes copied (meta, session and events of the agents copied). */
  bytes: number;
  /** Agents whose meta, session and events hash the same on both sides after the copy. */
  verified: number;
}

/**
 * Copies every agent of `from` into `to`, byte for byte, reading each without
 * taking its lease. An agent `to` holds already is skipped when its bytes are
 * the same, so a run that was cut short finishes when run again; when they
 * differ, nothing is copied and the run fails with `ALREADY_EXISTS` naming
 * them. Afterwards every agent of `from` is read again on both sides and its
 * meta, session and events compared by sha256 (`CORRUPTED_DATA` on a
 * difference, e.g. an agent written during the copy). A progress line is
 * shown on stderr while it is a terminal.
 */
export async function migrateStore(from: AnyStore, to: AnyStore): Promise<MigrateStoreSummary> {
  const ids = (await from.list()).map((m) => m.agentId);
  const there = new Set((await to.list()).map((m) => m.agentId));
  // Agents present on both sides are compared before anything is written.
  const skip = new Set<string>();
  const conflicts: string[] = [];
  for (const id of ids) {
    if (!there.has(id)) continue;
    if (sameBytes(await from.exportAgent(id), await to.exportAgent(id))) skip.add(id);
    else conflicts.push(id);
  }
  if (conflicts.length) {
    throw new ForkpointError({
      code: 'ALREADY_EXISTS',
      message: `the target store holds ${conflicts.length} agent(s) that differ from the source's: ${conflicts.slice(0, 10).join(', ')}${conflicts.length > 10 ? ', …' : ''}; nothing was copied`,
    });
  }
  const bar = progressBar('copying {bar} {value}/{total} agents');
  let copied = 0;
  let bytes = 0;
  try {
    bar.update(0, ids.length);
    for (const [i, id] of ids.entries()) {
      if (!skip.has(id)) {
        const x = await from.exportAgent(id);
        try {
          await to.importAgent(id, x);
          copied++;
          bytes += size(x);
        } catch (e) {
          // Created meanwhile (another run): fine when it is the same agent.
          if ((e as { code?: unknown })?.code !== 'ALREADY_EXISTS' || !sameBytes(x, await to.exportAgent(id))) throw e;
          skip.add(id);
        }
      }
      bar.update(i + 1, ids.length);
    }
  } finally {
    bar.stop();
  }
  // Verify: every agent of the source, on both sides.
  const toIds = new Set((await to.list()).map((m) => m.agentId));
  const missing = ids.filter((id) => !toIds.has(id));
  if (missing.length) throw new ForkpointError({ code: 'CORRUPTED_DATA', message: `after the copy, the target lacks agent(s) ${missing.join(', ')}` });
  let verified = 0;
  for (const id of ids) {
    const [a, b] = [await from.exportAgent(id), await to.exportAgent(id)];
    for (const part of ['meta', 'session', 'events'] as const) {
      if (sha256(a[part]) !== sha256(b[part])) {
        throw new ForkpointError({ code: 'CORRUPTED_DATA', message: `after the copy, agent '${id}' differs between the stores (its ${part}; was it written during the copy?)` });
      }
    }
    verified++;
  }
  return { agents: ids.length, copied, skipped: skip.size, bytes, verified };
}
