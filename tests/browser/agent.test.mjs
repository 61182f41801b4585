// The durable Agent in real Chromium on the real IndexedDB: the storage
// contract suite on IdbAgentStorage and the agent scenarios (the same as
// tests/js/agent-web.test.mjs on fake-indexeddb), then what only tabs show:
// state survives a reload, a second tab gets AGENT_LOCKED (Web Locks), a tab
// closed in the middle of a tool is a crash the next tab seals, and a quota
// hit is STORAGE_FULL with nothing of the step stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from './server.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium.mjs';

const skip = !existsSync(CHROMIUM) && 'Chromium is not installed';

async function withBrowser(f) {
  const server = await serve();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  try {
    const context = await browser.newContext();
    const open = async () => {
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`${server.url}/tests/browser/agent.html`);
      await page.waitForFunction(() => window.ready === true, null, { timeout: 30_000 });
      return { page, errors };
    };
    await f({ open, context, url: server.url });
  } finally {
    await browser.close();
    await server.close();
  }
}

test('Agent on IndexedDB in Chromium: the storage contract suite and the agent scenarios', { skip }, async (t) => {
  await withBrowser(async ({ open }) => {
    const { page, errors } = await open();
    assert.equal(await page.evaluate(() => web.IndexedDbAgentStore.webLocks), true, 'leases are Web Locks here');
    const checks = await page.evaluate(() => window.contractChecks);
    assert.ok(checks.length >= 13);
    for (const name of checks) {
      await t.test(`contract: ${name}`, async () => {
        assert.equal(await page.evaluate((n) => window.runContract(n), name), 'ok');
      });
    }
    const names = await page.evaluate(() => window.scenarioNames);
    assert.ok(names.length >= 10);
    for (const name of names) {
      await t.test(name, async () => {
        assert.equal(await page.evaluate((n) => window.runScenario(n), name), 'ok');
      });
    }
    assert.deepEqual(errors, []);
  });
});

test('Agent in Chromium: an approval survives a reload; a second tab gets AGENT_LOCKED; a tab closed mid-tool is sealed as a crash', { skip }, async () => {
  await withBrowser(async ({ open }) => {
    // A scripted agent with a tool and an approval; the page reloads while it waits.
    let { page } = await open();
    const paused = await page.evaluate(async () => {
      const store = await web.IndexedDbAgentStore.open('tabs');
      const model = new web.ScriptedProvider([{ toolCalls: [{ id: 'ok1', name: 'add', arguments: { a: 20, b: 22 } }] }]);
      window.agent = await web.Agent.create({ agentId: 'ask', model, tools: ['add'], permission: { mode: 'approval' } }, { store, toolRegistry: tools(web) });
      return window.agent.chat('add them');
    });
    assert.equal(paused.status, 'paused');
    assert.deepEqual(paused.permissionIds, ['ok1']);
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    const after = await page.evaluate(async () => {
      const store = await web.IndexedDbAgentStore.open('tabs');
      const model = new web.ScriptedProvider([(req) => ({ text: `the sum is ${JSON.parse(req.messages.at(-1).content[0].text).sum}` })]);
      const agent = await web.Agent.resume('ask', { model }, { store, toolRegistry: tools(web) });
      const before = { state: (await agent.status()).state, breakpoint: (await agent.status()).breakpoint, roles: (await agent.messages()).map((m) => m.role) };
      await agent.decide('ok1', 'allow');
      await agent.idle();
      const out = { before, text: (await agent.messages()).at(-1).content[0].text, audit: (await agent.toolCalls())[0].audit.map((a) => a.state) };
      window.agent = agent; // held by this tab from now on
      return out;
    });
    assert.deepEqual(after.before, { state: 'PAUSED', breakpoint: 'AWAITING_APPROVAL', roles: ['user', 'assistant'] });
    assert.equal(after.text, 'the sum is 42');
    assert.deepEqual(after.audit, ['PENDING', 'APPROVAL_REQUIRED', 'APPROVED', 'EXECUTING', 'COMPLETED']);

    // Two tabs on one agent: the second gets AGENT_LOCKED until the first lets go.
    const { page: second } = await open();
    const tryResume = () =>
      second.evaluate(async () => {
        const store = await web.IndexedDbAgentStore.open('tabs');
        try {
          const a = await web.Agent.resume('ask', { model: new web.ScriptedProvider([]) }, { store, toolRegistry: tools(web) });
          const n = (await a.messages()).length;
          await a.close();
          return { n };
        } catch (e) {
          return { code: e.code, message: e.message };
        } finally {
          store.close();
        }
      });
    const locked = await tryResume();
    assert.equal(locked.code, 'AGENT_LOCKED', JSON.stringify(locked));
    assert.ok(/another tab/.test(locked.message), locked.message);
    await page.evaluate(() => window.agent.close());
    assert.deepEqual(await tryResume(), { n: 4 });

    // A tab closed while a tool runs (it never finishes): the next tab's crash resume seals the call.
    const started = await second.evaluate(
      () =>
        new Promise((resolve, reject) => {
          (async () => {
            const store = await web.IndexedDbAgentStore.open('tabs');
            const toolRegistry = tools(web).register({ name: 'hang', description: 'never ends', inputSchema: { type: 'object' }, run: () => new Promise(() => {}) });
            const model = new web.ScriptedProvider([{ toolCalls: [{ id: 'h1', name: 'hang', arguments: { x: 1 } }] }]);
            const agent = await web.Agent.create({ agentId: 'crashy', model, tools: ['hang'] }, { store, toolRegistry });
            agent.on('tool:start', (e) => resolve(e.call?.id ?? e.callId ?? 'started'));
            agent.chat('run it').catch(reject);
          })().catch(reject);
        }),
    );
    assert.ok(started);
    await second.close({ runBeforeUnload: false });
    const { page: third } = await open();
    const crash = await third.evaluate(async () => {
      const store = await web.IndexedDbAgentStore.open('tabs');
      const toolRegistry = tools(web);
      const model = new web.ScriptedProvider([{ text: 'recovered' }]);
      // The closed tab's lock goes as the browser tears it down.
      let agent;
      for (let i = 0; ; i++) {
        try {
          agent = await web.Agent.resume('crashy', { model }, { store, toolRegistry }, { strategy: 'crash' });
          break;
        } catch (e) {
          if (e.code !== 'AGENT_LOCKED' || i > 50) throw e;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      const [call] = await agent.toolCalls();
      const last = (await agent.messages()).at(-1);
      const evs = await replay(agent);
      const resumed = evs.filter((e) => e.type === 'agent_resumed').at(-1);
      const text = (await agent.chat('go on')).text;
      await agent.close();
      return { state: call.state, audit: call.audit.map((a) => a.state), last: { role: last.role, isError: last.isError, id: last.toolCallId, payload: JSON.parse(last.content[0].text) }, resumed, text };
    });
    assert.equal(crash.state, 'SEALED');
    assert.deepEqual(crash.audit, ['PENDING', 'EXECUTING', 'SEALED']);
    assert.equal(crash.last.role, 'toolResult');
    assert.equal(crash.last.isError, true);
    assert.equal(crash.last.id, 'h1');
    assert.match(crash.last.payload.error, /interrupted during execution/);
    assert.equal(crash.last.payload.data.status, 'EXECUTING');
    assert.equal(crash.resumed.strategy, 'crash');
    assert.equal(crash.resumed.breakpoint, 'TOOL_EXECUTING');
    assert.deepEqual(crash.resumed.sealed.map((s) => [s.id, s.priorState]), [['h1', 'EXECUTING']]);
    assert.equal(crash.text, 'recovered');
  });
});

test('Agent in Chromium: a step that hits the quota fails with STORAGE_FULL and stores nothing of itself; the agent resumes once there is room', { skip }, async () => {
  await withBrowser(async ({ open, context, url }) => {
    const { page } = await open();
    const cdp = await context.newCDPSession(page);
    // Set before the origin's database is opened (Chromium reads it then).
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: url, quotaSize: 3 * 1024 * 1024 });
    const full = await page.evaluate(async () => {
      const store = await web.IndexedDbAgentStore.open('quota-agents');
      const noise = (n) => {
        const parts = [];
        for (let i = 0; i < n / 2; i += 65536) parts.push(Array.from(crypto.getRandomValues(new Uint8Array(65536)), (b) => b.toString(16).padStart(2, '0')).join(''));
        return parts.join('');
      };
      const toolRegistry = tools(web).register({ name: 'huge', description: 'a result too large', inputSchema: { type: 'object' }, run: () => ({ blob: noise(6 << 20) }) });
      const model = new web.ScriptedProvider([{ text: 'small' }, { toolCalls: [{ id: 'big1', name: 'huge', arguments: {} }] }]);
      const agent = await web.Agent.create({ agentId: 'full', model, tools: ['huge'] }, { store, toolRegistry });
      await agent.chat('first');
      let code = null;
      try {
        await agent.chat('too much');
      } catch (e) {
        code = e.code;
      }
      const after = await agent.send('after').then(() => null, (e) => e.code);
      await agent.close();
      store.close();
      return { code, after };
    });
    assert.equal(full.code, 'STORAGE_FULL');
    assert.equal(full.after, 'CLOSED', 'a failed write closes the agent');
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: url });
    const out = await page.evaluate(async () => {
      const store = await web.IndexedDbAgentStore.open('quota-agents');
      const again = await web.Agent.resume('full', { model: new web.ScriptedProvider([{ text: 'still here' }]) }, { store, toolRegistry: tools(web) }, { strategy: 'crash' });
      const msgs = await again.messages();
      const call = (await again.toolCalls())[0];
      const text = (await again.chat('go on')).text;
      await again.close();
      return { roles: msgs.map((m) => m.role), first: msgs[1].content[0].text, state: call.state, audit: call.audit.map((a) => a.state), text };
    });
    // The call was EXECUTING when its result could not be stored: the crash resume seals it.
    assert.equal(out.first, 'small');
    assert.deepEqual(out.audit, ['PENDING', 'EXECUTING', 'SEALED']);
    assert.deepEqual(out.roles, ['user', 'assistant', 'user', 'assistant', 'toolResult']);
    assert.equal(out.text, 'still here');
  });
});
