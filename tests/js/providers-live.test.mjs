// Against the real APIs — only when their keys are set (never in CI). Each
// provider: a streamed tool round trip, usage and cost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { napi } from './helpers.mjs';

const { Agent, JSONStore, ToolRegistry, createProvider } = napi;
const LIVE = [
  ['anthropic', 'claude-haiku-4-5', 'ANTHROPIC_API_KEY'],
  ['openai', 'gpt-4.1-mini', 'OPENAI_API_KEY'],
  ['openai-responses', 'gpt-4.1-mini', 'OPENAI_API_KEY'],
  ['google', 'gemini-2.5-flash', process.env.GEMINI_API_KEY ? 'GEMINI_API_KEY' : 'GOOGLE_API_KEY'],
];

for (const [provider, model, key] of LIVE) {
  const skip = process.env[key] ? false : `${key} is not set: the live ${provider} test is skipped`;
  test(`live ${provider} (${model}): a streamed tool round trip`, { skip }, async () => {
    const toolRegistry = new ToolRegistry().register({
      name: 'add',
      description: 'Adds two integers and returns {sum}.',
      inputSchema: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] },
      run: ({ a, b }) => ({ sum: a + b }),
    });
    const store = new JSONStore(mkdtempSync(join(tmpdir(), 'fp-live-')));
    const agent = await Agent.create({ model: createProvider({ provider, model, maxTokens: 512 }), tools: ['add'], systemPrompt: 'Use the add tool for arithmetic. Answer with the number only.' }, { store, toolRegistry });
    const r = await agent.chat('What is 1234 + 4321?');
    assert.match(r.text, /5555/);
    const info = await agent.info();
    assert.ok(info.usage.calls >= 2 && info.usage.input > 0 && info.usage.output > 0, JSON.stringify(info.usage));
    assert.ok((await agent.toolCalls()).some((c) => c.name === 'add' && c.state === 'COMPLETED'));
    await agent.close();
  });
}
