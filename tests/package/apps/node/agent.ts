// A small Node program on both packages, compiled by the packaging test
// (tests/package/package.test.mjs) as CommonJS (module node16), as an ES module
// (module nodenext) and type-checked with moduleResolution bundler, strict,
// skipLibCheck false, against the packed tarballs only; then run.
import { Agent, JSONStore, ToolRegistry, ScriptedProvider, ForkpointError, SessionLoader } from 'forkpoint';
import { Session, ForkpointError as WebForkpointError, type AgentMessage } from 'forkpoint-web';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';

const SESSION =
  JSON.stringify({ type: 'session', version: 3, id: '0b6f3c1e-0000-4000-8000-00000000a002', timestamp: '2026-03-01T10:00:20.000Z', cwd: '/app' }) +
  '\n' +
  JSON.stringify({ type: 'message', id: 'a1', parentId: null, timestamp: '2026-03-01T10:00:21.000Z', message: { role: 'user', content: [{ type: 'text', text: 'hi' }], timestamp: 1 } }) +
  '\n';

async function main(): Promise<void> {
  let sum = 0;
  const toolRegistry = new ToolRegistry().register<{ a: number; b: number }>({
    name: 'add',
    description: 'adds two numbers',
    inputSchema: { type: 'object' },
    run: ({ a, b }) => ({ sum: (sum = a + b) }),
  });
  const dir = mkdtempSync(join(process.cwd(), 'agents-')); // inside the temporary project
  const model = new ScriptedProvider([{ text: 'adding', toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] }, { text: 'done' }]);
  const agent = await Agent.create({ agentId: 'pack', model, tools: ['add'] }, { store: new JSONStore(dir), toolRegistry });
  const reply = await agent.chat('add 2 and 3');
  await agent.close();
  const resumed = await Agent.resume('pack', { model: new ScriptedProvider([]) }, { store: new JSONStore(dir), toolRegistry }, { strategy: 'crash' });
  const messages: AgentMessage[] = await resumed.messages();
  await resumed.close();

  const web = Session.fromJsonl(SESSION);
  const native = SessionLoader.fromJsonl(SESSION);
  let code = '';
  try {
    Session.fromJsonl('not json\n');
  } catch (e) {
    // Either package's class recognises the other's errors.
    if (e instanceof WebForkpointError && e instanceof ForkpointError) code = e.code;
  }
  console.log(
    JSON.stringify({
      status: reply.status,
      text: reply.text,
      sum,
      messages: messages.length,
      webEntries: web.getMetadata().entryCount,
      nativeEntries: native.getMetadata().entryCount,
      code,
    }),
  );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
