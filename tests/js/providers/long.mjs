// A long conversation for the agent's request-body tests (providers.test.mjs,
// providers-web.test.mjs): each tool result is about 600 KiB, so the kept
// conversion passes 1 MiB (a sealed piece) after a couple of rounds and later
// requests send it again as pieces.
import assert from 'node:assert/strict';
import { defaultModel } from './wire.mjs';

export const LIST_KEY = { anthropic: 'messages', openai: 'messages', 'openai-responses': 'input', google: 'contents' };

/** `{ toolRegistry, script }` for `rounds` rounds of a `read` call and its answer. */
export function longConversation(ToolRegistry, rounds) {
  const big = ({ path }) => ({ path, text: `${path} "é" `.repeat(50_000) });
  const toolRegistry = new ToolRegistry().register({ name: 'read', description: 'reads a file', inputSchema: { type: 'object' }, run: big });
  const script = [];
  for (let i = 0; i < rounds; i++) {
    script.push({ turn: { text: `reading f${i}`, toolCalls: [{ id: `call_${i}`, name: 'read', arguments: { path: `f${i}` } }] } });
    script.push({ turn: { text: `f${i} is read.` } });
  }
  return { toolRegistry, script };
}

/** Every request `srv` got carries the whole conversion of the messages before its answer. */
export function checkRequests(srv, msgs, p, toProvider) {
  const answers = msgs.flatMap((m, i) => (m.role === 'assistant' ? [i] : []));
  srv.requests.forEach((rq, k) => {
    assert.equal(typeof rq.body, 'object', `request ${k} is JSON`);
    assert.ok(Number(rq.headers['content-length']) > 0, `request ${k} says its length`);
    const want = toProvider(msgs.slice(0, answers[k]), p, { model: defaultModel(p) }).request[LIST_KEY[p]];
    assert.deepEqual(rq.body[LIST_KEY[p]], want, `${p}: request ${k}`);
  });
  assert.ok(Number(srv.requests.at(-1).headers['content-length']) > 3 << 19, 'the last request is long');
}

/**
 * Counts, for `agent`'s requests, the kept pieces given again by id (not
 * copied out again): wraps the native side's `takeRequestBody`.
 */
export function countReuse(agent) {
  const native = agent.n;
  const take = native.takeRequestBody.bind(native);
  const seen = { reused: 0, bodies: 0 };
  native.takeRequestBody = () => {
    const flat = take();
    if (flat) {
      seen.bodies++;
      for (let i = 1; i < flat.length; i += 2) if (flat[i] === null) seen.reused++;
    }
    return flat;
  };
  return seen;
}
