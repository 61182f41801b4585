/**
 * The `forkpoint` command: look at agents and session files, replay events,
 * fork, and rewind an agent to a checkpoint. `bin/forkpoint.mjs` calls `main`.
 */
import { Command } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { CheckpointInfo, TreeRun } from '@forkpoint/types';
import { EventBus, ForkpointError, call } from '@forkpoint/shared';
import { Agent, JSONStore, TemplateRegistry, ToolRegistry } from './agent.js';
import type { AgentTemplate, ModelRef, ModelProvider, StoredAgentMeta } from './agent.js';
import { EventLog } from './eventlog.js';
import { IncrementalSessionLoader, SessionLoader } from './index.js';
import * as native from '../native/index.js';

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

const openAgent = (store: JSONStore, id: string) =>
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

/**
 * The line the CLI prints for an error: `forkpoint: CODE: message`, then where
 * it is when the error says so — `(path:line, byte offset N)`, or the parts known.
 */
export function formatError(e: unknown): string {
  const err = (e ?? {}) as { code?: unknown; message?: unknown; path?: unknown; line?: unknown; offset?: unknown };
  const message = typeof err.message === 'string' ? err.message : String(e);
  const code = typeof err.code === 'string' && err.code ? `${err.code}: ` : '';
  // (Node's own errors already name their path in the message.)
  const path = typeof err.path === 'string' && err.path && !message.includes(err.path) ? err.path : null;
  const line = typeof err.line === 'number' ? err.line : null;
  const offset = typeof err.offset === 'number' ? err.offset : null;
  const at = path !== null ? (line !== null ? `${path}:${line}` : path) : line !== null ? `line ${line}` : null;
  const where = [at, offset !== null ? `byte offset ${offset}` : null].filter((x) => x !== null).join(', ');
  return `forkpoint: ${code}${message}${where ? ` (${where})` : ''}`;
}

/** Runs the CLI with `argv` (as `process.argv`). */
export async function main(argv: string[], deps: CliDeps = {}): Promise<void> {
  const out = deps.out ?? ((s: string) => process.stdout.write(s + '\n'));
  const program = new Command();
  program
    .name('forkpoint')
    .description('Look at durable agents and session files; replay events; fork; rewind to a checkpoint.')
    .option('--store <dir>', 'the agent store (JSONStore directory)', process.env.FORKPOINT_STORE ?? '.forkpoint')
    .showHelpAfterError();
  const store = () => new JSONStore(program.opts<{ store: string }>().store);

  program
    .command('list')
    .description('the agents in the store')
    .option('--json', 'machine-readable output')
    .action((o: { json?: boolean }) => {
      const agents = store().list();
      if (o.json) return out(JSON.stringify(agents, null, 2));
      if (agents.length === 0) return out(dim(`no agents in ${store().dir}`));
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
      const s = store();
      const info = JSON.parse(await s.inspectJson(id)) as Inspected;
      const session = await SessionLoader.open(join(s.dir, id, 'session.jsonl'));
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
      const s = store();
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
      const path = join(store().dir, id, 'events.jsonl');
      if (!store().exists(id)) throw new ForkpointError({ code: 'AGENT_NOT_FOUND', message: `no agent '${id}' in the store` });
      const since = o.since === undefined ? null : Number(o.since);
      if (since !== null && !(Number.isInteger(since) && since >= 0)) throw new ForkpointError({ code: 'INVALID_INPUT', message: '--since takes a whole number' });
      const log = await EventLog.open(path, { readOnly: true });
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
      const agent = await openAgent(store(), id);
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
    .command('inspect <file>')
    .description('any session file (pi v1–v3, forkpoint; .jsonl or .jsonl.gz): metadata and branch tree')
    .option('--json', 'machine-readable output')
    .action(async (file: string, o: { json?: boolean }) => {
      const size = statSync(file).size;
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
      const s = await SessionLoader.open(file);
      const md = s.getMetadata();
      if (o.json) return out(JSON.stringify({ metadata: md, tree: s.getBranch().getTree() }, null, 2));
      out(`${bold(file)}  ${(size / 2 ** 20).toFixed(1)} MiB`);
      for (const [k, v] of Object.entries(md)) if (v !== null && typeof v !== 'object') out(`  ${k.padEnd(20)} ${v}`);
      out('  tree (linear runs collapsed):');
      printTree(s.getBranch().getTree(), out);
    });

  await program.parseAsync(argv);
}
