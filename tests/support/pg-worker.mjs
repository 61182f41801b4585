// A worker of the PostgreSQL reliability harness (scripts/reliability-pg.mjs):
// one process per "host", `node pg-worker.mjs '<json config>'` with config
// `{ name, trial, url, schema, leaseMs, agents: [ids], seed }`.
//
// It runs every agent of the set it can get: `Agent.resumeOrCreate` with
// strategy 'crash' and autoRun (an agent another worker holds is
// AGENT_LOCKED: tried again every 100-200 ms, so a lease that runs out is
// taken over), then steps: a message, a tool call the scripted model asks
// for, the tool (it waits a few ms), the model's answer. Each piece of text
// this worker makes carries a marker unique to the run (`M.<trial>.<worker>.
// <agent>.e<epoch>.n<step>.<kind>`; S the message, C the answer asking for
// the tool, T the tool's result, R the final answer), so the harness can
// look for it in the database.
//
// stdout, one `KIND {json}` line each (`at` = Date.now()):
//   READY {}                               the store is open
//   HOLD {agent, epoch, takeover}          got the lease (takeover: the agent was locked by another before)
//   ATTEMPT {agent, epoch, step, kind, marker}   about to hand text with `marker` to the agent (a write follows)
//   TOOL_START {agent, epoch, step, callId} the tool started (the harness strikes here)
//   ACK {agent, epoch, step, seq, markers} chat() resolved: the step and its markers are durable, up to event `seq`
//   ERR {agent, epoch, code, message, pending}  a call failed; `pending`: markers attempted and not acknowledged
//   RELEASE {agent, epoch}                 closed the agent (its lease given up)
//   BYE {}                                 stopped (after a `STOP` line on stdin)
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import { createInterface } from 'node:readline';

const require = createRequire(import.meta.url);
const { Agent, PostgresStore, ToolRegistry, ForkpointError } = require('forkpoint');

const cfg = JSON.parse(process.argv[2]);
const say = (kind, data = {}) => process.stdout.write(`${kind} ${JSON.stringify({ ...data, at: Date.now() })}\n`);
let seed = (Number(cfg.seed) >>> 0) || 1;
const rand = () => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let stopping = false;
let wake = () => {};
const stopped = new Promise((r) => (wake = r));

/** What one agent's current lease is doing: its epoch, step and the markers not yet acknowledged. */
function context(agentId, epoch) {
  return { agentId, epoch, step: 0, pending: [], calls: 0 };
}
const contexts = new Map(); // agent id → context of the lease held now
const marker = (c, kind) => `M.${cfg.trial}.${cfg.name}.${c.agentId}.e${c.epoch}.n${c.step}.${kind}${kind === 'C' || kind === 'R' ? c.calls++ : ''}`;
const attempt = (c, kind) => {
  const m = marker(c, kind);
  c.pending.push(m);
  say('ATTEMPT', { agent: c.agentId, epoch: c.epoch, step: c.step, kind, marker: m });
  return m;
};

const toolRegistry = new ToolRegistry().register({
  name: 'work',
  description: 'works for a few milliseconds and returns a marker',
  inputSchema: { type: 'object' },
  run: async (_input, ctx) => {
    const c = contexts.get(ctx.agentId);
    say('TOOL_START', { agent: ctx.agentId, epoch: c?.epoch, step: c?.step, callId: ctx.callId });
    await sleep(3 + rand() * 30);
    if (!c) return { marker: null };
    return { marker: attempt(c, 'T') };
  },
});

/** The scripted model of one agent: a tool call after a message, an answer after a result. */
function modelFor(agentId) {
  return {
    provider: 'scripted',
    model: 'pg-worker-1',
    api: 'scripted',
    async complete(request) {
      await sleep(rand() * 5);
      const c = contexts.get(agentId);
      const last = request.messages[request.messages.length - 1];
      if (!c) return { content: [{ type: 'text', text: 'no lease' }], stopReason: 'stop' };
      if (last?.role === 'user') {
        const m = attempt(c, 'C');
        return { content: [{ type: 'text', text: m }, { type: 'toolCall', id: `call_${m.replaceAll('.', '_')}`, name: 'work', arguments: { m } }], stopReason: 'toolUse' };
      }
      return { content: [{ type: 'text', text: attempt(c, 'R') }], stopReason: 'stop' };
    },
  };
}

const store = await PostgresStore.open(cfg.url, { schema: cfg.schema, leaseMs: cfg.leaseMs, host: cfg.name });
const epochs = new Map();
const sawLocked = new Set();

function failed(c, e, where) {
  const code = e instanceof ForkpointError ? e.code : 'NOT_FORKPOINT_ERROR';
  say('ERR', { agent: c.agentId, epoch: c.epoch, where, code, message: String(e?.message ?? e).slice(0, 300), pending: c.pending });
  c.pending = [];
}

async function runAgent(agentId) {
  while (!stopping) {
    let agent;
    const epoch = (epochs.get(agentId) ?? 0) + 1;
    const c = context(agentId, epoch);
    contexts.set(agentId, c);
    try {
      agent = await Agent.resumeOrCreate(agentId, { model: modelFor(agentId), tools: ['work'] }, { store, toolRegistry }, { strategy: 'crash', autoRun: true });
    } catch (e) {
      contexts.delete(agentId);
      if (e instanceof ForkpointError && e.code === 'AGENT_LOCKED') sawLocked.add(agentId);
      else say('OPEN_ERR', { agent: agentId, code: e?.code ?? 'NOT_FORKPOINT_ERROR', message: String(e?.message ?? e).slice(0, 300) });
      await Promise.race([sleep(100 + rand() * 100), stopped]);
      continue;
    }
    epochs.set(agentId, epoch);
    say('HOLD', { agent: agentId, epoch, takeover: sawLocked.has(agentId) });
    sawLocked.delete(agentId);
    let alive = true;
    try {
      // autoRun may be finishing what the last holder left (a sealed call's answer).
      await agent.idle();
      if (c.pending.length > 0) say('ACK', { agent: agentId, epoch, step: -1, seq: (await agent.status()).lastBookmark?.seq ?? null, markers: c.pending });
      c.pending = [];
    } catch (e) {
      failed(c, e, 'resume');
      alive = false;
    }
    while (alive && !stopping) {
      c.step++;
      try {
        const r = await agent.chat(attempt(c, 'S'));
        say('ACK', { agent: agentId, epoch, step: c.step, status: r.status, seq: r.last?.seq ?? null, markers: c.pending });
        c.pending = [];
      } catch (e) {
        failed(c, e, 'chat');
        alive = false;
        break;
      }
      await Promise.race([sleep(rand() * 20), stopped]);
    }
    contexts.delete(agentId);
    try {
      await agent.close();
    } catch (e) {
      say('CLOSE_ERR', { agent: agentId, epoch, code: e?.code, message: String(e?.message ?? e).slice(0, 300) });
    }
    say('RELEASE', { agent: agentId, epoch });
  }
}

createInterface({ input: process.stdin }).on('line', (l) => {
  if (l.trim() === 'STOP') {
    stopping = true;
    wake();
  }
});
say('READY', { host: hostname(), pid: process.pid });
await Promise.all(cfg.agents.map((id) => runAgent(id)));
await store.close();
say('BYE');
process.exit(0);
