// Provider conversion through the package under test (FORKPOINT_BACKEND=napi|wasm):
// the conformance suite of tests/fixtures/providers (the same cases the Rust suite
// runs), byte stability through the JS API, and the API's contracts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { BACKEND, pkg, fixturesDir, throwsCode, fromJsonl } from './helpers.mjs';

const dir = fixturesDir + 'providers/';
const cases = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => ({ file: f, ...JSON.parse(readFileSync(dir + f, 'utf8')), expected: JSON.parse(readFileSync(dir + 'expected/' + f, 'utf8')) }));
const TARGETS = ['anthropic', 'openai', 'openai-responses', 'google'];

function pointer(doc, ptr) {
  if (ptr === '') return { found: true, value: doc };
  let cur = doc;
  for (const raw of ptr.slice(1).split('/')) {
    const k = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object' || !(k in cur)) return { found: false };
    cur = cur[k];
  }
  return { found: true, value: cur };
}

function check(a, root, file) {
  const what = `${file}: ${JSON.stringify(a)}`;
  if (a.pointer !== undefined) {
    const got = pointer(root, a.pointer);
    if ('equals' in a) assert.deepEqual(got.value, a.equals, what);
    if ('length' in a) assert.equal(got.value?.length, a.length, what);
    if (a.absent) assert.equal(got.found, false, what);
    if ('matches' in a) assert.match(String(got.value), new RegExp(a.matches), what);
    if ('sameAs' in a) assert.deepEqual(got.value, pointer(root, a.sameAs).value, what);
    if ('notSameAs' in a) assert.notDeepEqual(got.value, pointer(root, a.notSameAs).value, what);
  }
  const codes = (root.report?.steps ?? []).map((s) => s.code);
  for (const c of a.steps ?? []) assert.ok(codes.includes(c), `${what}: ${c} not in ${codes}`);
  if (a.noSteps) assert.deepEqual(codes, [], what);
}

test(`[${BACKEND}] provider conformance suite: ${cases.length} cases, every target, assertions and expected outputs`, () => {
  assert.ok(cases.length >= 40);
  for (const c of cases) {
    if (c.error) {
      const attempt = () => {
        const conv = c.from === 'canonical' ? c.input : pkg.fromProvider(c.input, c.from);
        for (const t of TARGETS) pkg.toProvider(conv, t, c.options);
      };
      throwsCode(assert, attempt, c.error.code);
      continue;
    }
    // The input as its exact text (number spellings kept), as a client would send it.
    const text = c.expected.inputText;
    const conv = c.from === 'canonical' ? { json: text } : pkg.fromProvider(text, c.from);
    const canonical = c.from === 'canonical' ? JSON.parse(text) : { ...conv, json: undefined };
    delete canonical.json;
    assert.deepEqual(canonical, c.expected.canonical, `${c.file}: canonical`);
    const outs = { canonical };
    for (const t of TARGETS) {
      const o = pkg.toProvider(conv.json, t, c.options);
      assert.deepEqual(JSON.parse(o.body), o.request, `${c.file}: body is the request`);
      assert.deepEqual({ request: o.request, report: o.report, idMap: o.idMap, nameMap: o.nameMap }, c.expected[t], `${c.file}: ${t} differs from expected`);
      outs[t] = o;
    }
    for (const a of c.assert ?? []) {
      if (a.via === undefined) {
        check(a, outs[a.target], c.file);
        continue;
      }
      // The way home: the request made for `via` read back and converted to `target` with that trip's idMap.
      const back = pkg.fromProvider(outs[a.via].body, a.via);
      check(a, pkg.toProvider(back.json, a.target, { ...c.options, idMap: outs[a.via].idMap }), c.file);
    }
    if (c.from !== 'canonical' && c.byteStable !== false) {
      assert.equal(outs[c.from].body, text, `${c.file}: not byte-stable to ${c.from}`);
      assert.equal(outs[c.from].report.compatible, true, `${c.file}: lossy back to ${c.from}`);
      // The same through JS objects: the request as JSON.stringify writes it comes back.
      const { json: _json, ...viaObjects } = pkg.fromProvider(c.input, c.from);
      assert.equal(pkg.toProvider(viaObjects, c.from, c.options).body, JSON.stringify(c.input), `${c.file}: not byte-stable through objects`);
    }
  }
});

test(`[${BACKEND}] raw JSON text in: number spellings survive every conversion`, () => {
  // 1e400 has no JS number (JSON.parse gives Infinity): only the text path keeps it.
  const req = '{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1.10,"big":123456789012345678901234567890,"e":1e400}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}';
  const conv = pkg.fromProvider(req, 'anthropic');
  assert.equal(pkg.toProvider(conv.json, 'anthropic').body, req);
  const oa = pkg.toProvider(conv.json, 'openai');
  assert.equal(oa.request.messages[1].tool_calls[0].function.arguments, '{"a":1.10,"big":123456789012345678901234567890,"e":1e400}');
  const g = pkg.toProvider(conv.json, 'google');
  assert.match(g.body, /"args":\{"a":1\.10,"big":123456789012345678901234567890,"e":1e400\}/);
  // Through JS objects the same-provider bytes still come back (the original is kept
  // and matched by value as JSON.parse and JSON.stringify see it: 1e400 is Infinity,
  // written null; -0 is written 0). Before, either made every spelling of the
  // message come out as JSON.stringify writes it (1.10 as 1.1).
  for (const r of [req, req.replace('"a":1.10', '"a":1.10,"z":-0.0'), req.replace(',"e":1e400', ',"e":-0')]) {
    const back = pkg.toProvider(pkg.fromProvider(r, 'anthropic').messages, 'anthropic');
    assert.equal(back.body, r);
    assert.deepEqual(back.report.steps, []);
  }
  // An edit is still seen: the value changed, so the message is encoded afresh.
  const edited = pkg.fromProvider(req, 'anthropic').messages;
  edited[1].content[0].arguments.a = 2;
  assert.match(pkg.toProvider(edited, 'anthropic').body, /"input":\{"a":2,/);
});

test(`[${BACKEND}] MessageNormalizer: the seed API, one message at a time`, () => {
  const { MessageNormalizer } = pkg;
  const a = { role: 'assistant', content: [{ type: 'thinking', thinking: 'plan', signature: 'sig' }, { type: 'text', text: 'Hi' }, { type: 'tool_use', id: 'toolu_9', name: 'ls', input: { dir: '.' } }] };
  const n = MessageNormalizer.normalize(a, 'anthropic');
  assert.equal(n.role, 'assistant');
  assert.deepEqual(n.content.map((b) => b.type), ['thinking', 'text', 'toolCall']);
  assert.equal(n.api, 'anthropic-messages');
  assert.deepEqual(MessageNormalizer.denormalize(n, 'anthropic'), a);
  const o = MessageNormalizer.denormalizeWithReport(n, 'openai');
  assert.equal(o.message.role, 'assistant');
  assert.equal(o.message.tool_calls[0].function.arguments, '{"dir":"."}');
  assert.equal(o.message.tool_calls[0].id, 'toolu_9');
  assert.ok(o.report.steps.some((s) => s.code === 'thinking_to_text'));
  assert.equal(o.report.compatible, false);
  // Anthropic user turn with results and text: several canonical messages.
  const u = MessageNormalizer.normalize({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'a.txt' }, { type: 'text', text: 'go on' }] }, 'anthropic');
  assert.deepEqual(u.map((m) => m.role), ['toolResult', 'user']);
  // One OpenAI tool message per result; Responses items for an assistant turn.
  const items = MessageNormalizer.denormalize(n, 'openai-responses');
  assert.ok(Array.isArray(items));
  assert.deepEqual(items.map((i) => i.type ?? i.role), ['assistant', 'assistant', 'function_call']);
  assert.deepEqual(MessageNormalizer.normalize({ role: 'model', parts: [{ text: 'x' }] }, 'google').content, [{ type: 'text', text: 'x' }]);
  // A role this version does not model is kept as it was, for its provider only.
  const fn = { role: 'function', name: 'f', content: 'x' };
  assert.deepEqual(MessageNormalizer.normalize(fn, 'openai'), { role: 'unknown', provider: 'openai', raw: fn });
  assert.deepEqual(MessageNormalizer.denormalize(MessageNormalizer.normalize(fn, 'openai'), 'openai'), fn);
  throwsCode(assert, () => MessageNormalizer.normalize({ role: 'user' }, 'openai'), 'INVALID_INPUT');
  throwsCode(assert, () => MessageNormalizer.normalize('[]', 'openai'), 'INVALID_INPUT');
  throwsCode(assert, () => MessageNormalizer.denormalize({ role: 'system', content: 'x' }, 'anthropic'), 'INVALID_INPUT');
  // Anthropic's own inline system message goes back as it was.
  const inline = { role: 'system', content: [{ type: 'text', text: 'Answer in French.' }] };
  const ni = MessageNormalizer.normalize(inline, 'anthropic');
  assert.equal(ni.role, 'system');
  assert.deepEqual(MessageNormalizer.denormalize(ni, 'anthropic'), inline);
  assert.equal(MessageNormalizer.denormalize(ni, 'openai').role, 'system');
});

test(`[${BACKEND}] checkCompatibility lists what a pair may lose; errors have codes`, () => {
  const { SessionMigrator } = pkg;
  // The same provider: only the repairs made for it too, nothing an origin owns.
  const same = SessionMigrator.checkCompatibility('google', 'google');
  const sameCodes = same.steps.map((s) => s.code);
  for (const c of ['image_type_unsupported', 'leading_user_turn_added', 'orphan_tool_result_dropped']) assert.ok(sameCodes.includes(c), c);
  for (const c of ['thinking_to_text', 'signature_dropped', 'tool_error_flag_lost']) assert.ok(!sameCodes.includes(c), c);
  const toAnthropic = SessionMigrator.checkCompatibility('openai', 'anthropic').steps.map((s) => s.code);
  for (const c of ['tool_calls_to_text', 'leading_user_turn_added', 'mime_type_derived', 'image_type_unsupported']) assert.ok(toAnthropic.includes(c), c);
  assert.ok(SessionMigrator.checkCompatibility('anthropic', 'openai-responses').steps.some((s) => s.code === 'filename_extension_added'));
  const r = SessionMigrator.checkCompatibility('anthropic', 'openai');
  assert.equal(r.compatible, false);
  for (const f of ['thinking', 'thinkingSignature', 'isError']) assert.ok(r.lossyFields.includes(f), f);
  assert.ok(r.steps.some((s) => s.code === 'tool_result_image_moved'));
  const g = SessionMigrator.checkCompatibility('google', 'anthropic');
  assert.ok(g.lossyFields.includes('thoughtSignature'));
  assert.ok(!g.lossyFields.includes('isError'));
  throwsCode(assert, () => SessionMigrator.checkCompatibility('anthropic', 'cohere'), 'INVALID_INPUT');
  throwsCode(assert, () => pkg.toProvider('{"messages":', 'openai'), 'INVALID_INPUT');
  throwsCode(assert, () => pkg.toProvider([{ content: 'no role' }], 'openai'), 'INVALID_INPUT');
  throwsCode(assert, () => pkg.fromProvider({ messages: [{ role: 'user' }] }, 'anthropic'), 'INVALID_INPUT');
});

test(`[${BACKEND}] tool-call id map: reversible and collision-free, results follow their calls`, () => {
  const msgs = [
    { role: 'user', content: 'go' },
    { role: 'assistant', api: 'openai-completions', provider: 'openai', content: [
      { type: 'toolCall', id: 'a:b', name: 'f', arguments: {} },
      { type: 'toolCall', id: 'a/b', name: 'f', arguments: {} },
      { type: 'toolCall', id: 'x'.repeat(80), name: 'f', arguments: {} },
    ] },
    { role: 'toolResult', toolCallId: 'a/b', toolName: 'f', content: [{ type: 'text', text: '2' }], isError: false },
    { role: 'toolResult', toolCallId: 'a:b', toolName: 'f', content: [{ type: 'text', text: '1' }], isError: false },
    { role: 'toolResult', toolCallId: 'x'.repeat(80), toolName: 'f', content: [{ type: 'text', text: '3' }], isError: false },
  ];
  const o = pkg.toProvider(msgs, 'anthropic');
  const calls = o.request.messages[1].content.map((b) => b.id);
  assert.equal(new Set(calls).size, 3);
  for (const id of calls) assert.match(id, /^[a-zA-Z0-9_-]{1,64}$/);
  const results = o.request.messages[2].content;
  // Canonical results (no contentString) keep their blocks as an array.
  const byId = Object.fromEntries(results.map((r) => [r.tool_use_id, r.content[0].text]));
  assert.equal(byId[calls[0]], '1');
  assert.equal(byId[calls[1]], '2');
  assert.equal(byId[calls[2]], '3');
  for (const id of calls) assert.ok(o.idMap[id], `${id} in idMap`);
  assert.deepEqual(calls.map((id) => o.idMap[id]), ['a:b', 'a/b', 'x'.repeat(80)]);
});

test(`[${BACKEND}] Gemini turns normalized one at a time: made-up ids stay unique and results pair by name and position`, () => {
  const M = pkg.MessageNormalizer;
  const turns = [
    { role: 'user', parts: [{ text: 'go' }] },
    { role: 'model', parts: [{ functionCall: { name: 'ls', args: {} } }] },
    { role: 'user', parts: [{ functionResponse: { name: 'ls', response: { output: 'a.txt' } } }] },
    { role: 'model', parts: [{ functionCall: { name: 'ls', args: { all: true } } }] },
    { role: 'user', parts: [{ functionResponse: { name: 'ls', response: { output: 'a.txt .env' } } }] },
  ];
  const msgs = turns.flatMap((t) => [].concat(M.normalize(t, 'google')));
  for (const target of ['anthropic', 'openai', 'google']) {
    const o = pkg.toProvider(msgs, target);
    const codes = o.report.steps.map((s) => s.code);
    assert.ok(!codes.includes('missing_tool_result_filled') && !codes.includes('orphan_tool_result_dropped'), `${target}: ${codes}`);
  }
  const a = pkg.toProvider(msgs, 'anthropic').request.messages;
  const ids = [a[1].content[0].id, a[3].content[0].id];
  assert.notEqual(ids[0], ids[1]);
  assert.equal(a[2].content[0].tool_use_id, ids[0]);
  assert.equal(a[4].content[0].tool_use_id, ids[1]);
  assert.equal(a[4].content[0].content, 'a.txt .env');
  // Back to Gemini: no ids are made up on the wire.
  assert.ok(!pkg.toProvider(msgs, 'google').body.includes('"id"'));
});

test(`[${BACKEND}] a raw lone surrogate in JSON text is kept as an escape, not silently replaced`, () => {
  const raw = '{"messages":[{"role":"user","content":"a\ud83db"}]}';
  const o = pkg.toProvider(pkg.fromProvider(raw, 'anthropic'), 'anthropic');
  assert.equal(o.body, '{"messages":[{"role":"user","content":"a\\ud83db"}]}');
  const x = pkg.toProvider(pkg.fromProvider(raw, 'anthropic'), 'openai');
  assert.ok(x.report.steps.some((s) => s.code === 'lone_surrogates_replaced'));
  assert.ok(x.body.includes('a\\ufffdb'));
  // Canonical text given to toProvider: lone halves (high, low, at the end of a
  // 65,536-unit piece the addon transcodes) reach the core as escapes, which it
  // reports and replaces with an escaped U+FFFD for another provider (a half
  // turned into a raw U+FFFD on the way would not be reported).
  for (const [raw, esc] of [['a\ud83db', 'a\\ufffdb'], ['a\ude00b', 'a\\ufffdb'], ['\ud83d\ud83d\ude00', '\\ufffd\ud83d\ude00']]) {
    for (const pad of [0, 65505, 65506, 65507, 65508]) {
      const canon = `[{"role":"user","content":"${'x'.repeat(pad)}${raw}"}]`;
      const o = pkg.toProvider(canon, 'anthropic');
      assert.ok(o.body.endsWith(`${'x'.repeat(Math.min(pad, 3))}${esc}"}]}`), `${JSON.stringify(raw)} after ${pad}: ${o.body.slice(-40)}`);
      assert.ok(o.report.steps.some((s) => s.code === 'lone_surrogates_replaced'), `${JSON.stringify(raw)} after ${pad}: reported`);
    }
  }
  throwsCode(assert, () => pkg.toProvider(undefined, 'openai'), 'INVALID_INPUT');
  throwsCode(assert, () => pkg.fromProvider(undefined, 'anthropic'), 'INVALID_INPUT');
  throwsCode(assert, () => pkg.toProvider([], undefined), 'INVALID_INPUT');
  throwsCode(assert, () => pkg.toProvider([], 'openai', { system: 5 }), 'INVALID_INPUT');
});

test(`[${BACKEND}] a long text (it crosses to the addon in pieces): pairs and lone halves at a piece's edge`, () => {
  // The addon takes a string of more than 2^20 units in pieces of 2^18; a
  // piece never ends inside a pair, and a lone half at its end stays an escape.
  const head = '[{"role":"user","content":"';
  const tail = `"},{"role":"user","content":"${'y'.repeat(1 << 20)}"}]`;
  for (const [raw, want, lone] of [
    ['a\ud83d\ude00b', 'a\ud83d\ude00b', false],
    ['a\ud83db', 'a\\ufffdb', true],
    ['a\ude00b', 'a\\ufffdb', true],
  ]) {
    for (const shift of [-2, -1, 0, 1, 2]) {
      const pad = (1 << 18) - head.length - 2 + shift;
      const canon = `${head}${'x'.repeat(pad)}${raw}${tail}`;
      const o = pkg.toProvider(canon, 'anthropic');
      assert.ok(o.body.includes(`xxx${want}"`), `${JSON.stringify(raw)} at ${shift}`);
      assert.equal(o.report.steps.some((s) => s.code === 'lone_surrogates_replaced'), lone, `${JSON.stringify(raw)} at ${shift}: reported`);
      assert.equal(o.request.messages.length, 2);
      assert.equal(o.request.messages[1].content, 'y'.repeat(1 << 20));
      if (shift === 0) {
        // requestBuilder takes a long text the same way.
        const b = pkg.requestBuilder('anthropic');
        b.push(canon);
        assert.equal(b.build().body, o.body, `${JSON.stringify(raw)}: requestBuilder`);
      }
    }
  }
});

test(`[${BACKEND}] a long body as a string is its bytes decoded`, () => {
  const decoder = new TextDecoder();
  const cases = [['a\ud83d\ude00\u00e9\u2713', 1 << 20], ['plain ascii ', 1 << 20], ['caf\u00e9 ', 1 << 20], ['x', 1 << 10]];
  for (const [unit, times] of cases) {
    const content = unit.repeat(times);
    const o = pkg.toProvider([{ role: 'user', content }], 'anthropic');
    assert.equal(o.body, decoder.decode(o.bodyBytes), JSON.stringify(unit));
    assert.equal(o.request.messages[0].content, content, JSON.stringify(unit));
  }
});

test(`[${BACKEND}] the addon's string of UTF-8 bytes, cut in parts at every place of characters of one to four bytes`, { skip: BACKEND !== 'napi' && 'the addon only' }, () => {
  // The addon makes a long string (one byte a character when every one is
  // below U+0100, else UTF-16) in parts on threads, each cut at the first
  // character start from the middle: with the middle at each byte of the
  // pattern in turn, the cut falls before and inside each of its characters.
  const require = createRequire(import.meta.url);
  const native = createRequire(require.resolve('forkpoint'))('../native/index.js');
  const unit = Buffer.from('a\ud83d\ude00\u00e9\u2713'); // 1 + 4 + 2 + 3 bytes
  const patterns = Buffer.alloc(unit.length * (1 << 20)); // an even count of them
  for (let i = 0; i < patterns.length; i += unit.length) unit.copy(patterns, i);
  // With q ASCII bytes before them the middle falls q/2 bytes before a
  // pattern's start: q = 0, 2, … 18 puts it at each of the pattern's bytes.
  const seen = new Set();
  for (let q = 0; q < 2 * unit.length; q += 2) {
    const bytes = Buffer.concat([Buffer.alloc(q, 'x'), patterns]);
    seen.add((((bytes.length >> 1) - q) % unit.length + unit.length) % unit.length);
    assert.equal(native.utf8ToString(bytes), bytes.toString('utf8'), `${q} bytes before`);
  }
  assert.equal(seen.size, unit.length);
});

test(`[${BACKEND}] body strings kept outside V8's heap are collected: a loop of them does not grow memory`, { skip: BACKEND !== 'napi' && 'the addon only' }, () => {
  // An external string is invisible to V8's collector unless V8 is told of
  // its memory; without that, 20 strings of 64 MiB (UTF-16) were all kept.
  const require = createRequire(import.meta.url);
  const native = createRequire(require.resolve('forkpoint'))('../native/index.js');
  const body = Buffer.from(JSON.stringify('\u2713 ' + 'abcdefgh'.repeat(4 << 20)));
  const before = process.memoryUsage().rss;
  let peak = before;
  for (let i = 0; i < 20; i++) {
    assert.equal(native.utf8ToString(body).length, body.length - 2);
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  assert.ok(peak - before < 640e6, `RSS grew ${((peak - before) / 1e6).toFixed(0)} MB for 20 strings of 64 MiB`);
});

test(`[${BACKEND}] a long text that is not JSON: INVALID_INPUT at the byte where it breaks, nothing kept`, () => {
  // Long enough to cross to the addon in pieces and be parsed on threads.
  const items = Array.from({ length: 4 }, (_, i) => `{"role":"user","content":"${String(i).repeat(1 << 19)}"}`);
  const good = `[${items.join(',')}]`;
  const at = good.indexOf('},{"role"', good.length / 2) + 2;
  const bad = `${good.slice(0, at)}#${good.slice(at + 1)}`;
  for (const run of [() => pkg.toProvider(bad, 'anthropic'), () => pkg.requestBuilder('anthropic').push(bad)]) {
    assert.throws(run, (e) => e.code === 'INVALID_INPUT' && e.offset === at);
  }
  const b = pkg.requestBuilder('anthropic');
  assert.throws(() => b.push(bad), (e) => e.code === 'INVALID_INPUT');
  assert.equal(b.push(good), 4);
  assert.equal(b.build().body, pkg.toProvider(good, 'anthropic').body);
});

test(`[${BACKEND}] the thinking option: Anthropic's final tool turn without thinking goes as text only when it is on`, () => {
  const msgs = [
    { role: 'user', content: 'go' },
    { role: 'assistant', api: 'openai-completions', provider: 'openai', model: 'gpt-4.1', content: [{ type: 'toolCall', id: 'call_1', name: 'ls', arguments: {} }], stopReason: 'toolUse' },
    { role: 'toolResult', toolCallId: 'call_1', toolName: 'ls', content: [{ type: 'text', text: 'a.txt' }], isError: false },
  ];
  const off = pkg.toProvider(msgs, 'anthropic');
  assert.equal(off.request.messages[1].content[0].type, 'tool_use');
  assert.ok(!off.report.steps.some((s) => s.code === 'tool_calls_to_text'));
  const on = pkg.toProvider(msgs, 'anthropic', { thinking: true });
  assert.deepEqual(on.request.messages.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.deepEqual(on.request.messages.slice(1).map((m) => m.content[0].type), ['text', 'text']);
  assert.match(on.request.messages[2].content[0].text, /a\.txt/);
  assert.ok(on.report.steps.some((s) => s.code === 'tool_calls_to_text' && s.lossy));
  assert.equal(on.report.compatible, false);
  // Other targets ignore it; a value that is not a boolean is refused.
  assert.equal(pkg.toProvider(msgs, 'openai', { thinking: true }).body, pkg.toProvider(msgs, 'openai').body);
  throwsCode(assert, () => pkg.toProvider(msgs, 'anthropic', { thinking: 'yes' }), 'INVALID_INPUT');
});

test(`[${BACKEND}] requestBuilder: each build is the request toProvider gives for every message pushed so far`, () => {
  // An agent's conversation: turns of several origins, calls with ids the targets map, results.
  const msgs = [{ role: 'user', content: 'start' }];
  const apis = [['anthropic-messages', 'anthropic'], ['openai-responses', 'openai'], ['google-generative-ai', 'google']];
  for (let t = 0; t < 9; t++) {
    const [api, provider] = apis[t % 3];
    msgs.push({ role: 'assistant', api, provider, model: 'm', stopReason: 'toolUse', content: [
      { type: 'thinking', thinking: `plan ${t}`, thinkingSignature: `s${t}` },
      { type: 'toolCall', id: `call.${t}|item`, name: 'fs.read', arguments: { n: t } },
    ] });
    msgs.push({ role: 'toolResult', toolCallId: `call.${t}|item`, toolName: 'fs.read', content: [{ type: 'text', text: `r${t}` }], isError: t === 4 });
    if (t % 4 === 2) msgs.push({ role: 'user', content: `more ${t}` });
  }
  const opts = { system: 'be brief', tools: [{ name: 'fs.read', parameters: { type: 'object' } }] };
  for (const target of TARGETS) {
    const b = pkg.requestBuilder(target, opts);
    let pushed = 0;
    for (let k = 1; k <= msgs.length; k++) {
      b.push(msgs.slice(pushed, k));
      pushed = k;
      const got = b.build();
      const want = pkg.toProvider(msgs.slice(0, k), target, opts);
      assert.equal(got.body, want.body, `${target} after ${k}`);
      assert.equal(new TextDecoder().decode(got.bodyBytes), want.body);
      assert.deepEqual(got.report, want.report, `${target} after ${k}: report`);
      assert.deepEqual(got.idMap, want.idMap);
      assert.deepEqual(got.nameMap, want.nameMap);
    }
    // The part before the last assistant turn is kept for the next build.
    assert.ok(b.kept >= msgs.length - 3, `${target}: kept ${b.kept} of ${msgs.length}`);
  }
  throwsCode(assert, () => pkg.requestBuilder('nope'), 'INVALID_INPUT');
  throwsCode(assert, () => pkg.requestBuilder('openai').push([{ content: 'no role' }]), 'INVALID_INPUT');
});

test(`[${BACKEND}] objects nested too deeply for JSON are INVALID_INPUT (not INTERNAL), and nothing is kept`, () => {
  const nest = (n, array) => {
    let v = array ? [] : {};
    for (let i = 0; i < n; i++) v = array ? [v] : { a: v };
    return v;
  };
  for (const deep of [nest(100_000, false), nest(100_000, true)]) {
    const msgs = [{ role: 'user', content: [{ type: 'text', text: 'hi', extra: deep }] }];
    const e = throwsCode(assert, () => pkg.toProvider(msgs, 'openai'), 'INVALID_INPUT');
    assert.match(e.message, /nested too deeply/);
    throwsCode(assert, () => pkg.toProvider([{ role: 'user', content: 'hi' }], 'anthropic', { tools: [{ name: 'f', parameters: deep }] }), 'INVALID_INPUT');
    throwsCode(assert, () => pkg.fromProvider({ messages: [{ role: 'user', content: 'x', deep }] }, 'anthropic'), 'INVALID_INPUT');
    throwsCode(assert, () => pkg.MessageNormalizer.normalize({ role: 'user', content: 'x', deep }, 'openai'), 'INVALID_INPUT');
    const b = pkg.requestBuilder('anthropic');
    assert.equal(b.push([{ role: 'user', content: 'first' }]), 1);
    throwsCode(assert, () => b.push(msgs), 'INVALID_INPUT');
    throwsCode(assert, () => b.push(msgs[0]), 'INVALID_INPUT');
    // The builder holds what it held.
    assert.deepEqual(b.build().request.messages, [{ role: 'user', content: 'first' }]);
  }
});

test(`[${BACKEND}] text crosses the boundary unchanged: ASCII, Latin-1, BMP, astral, escapes, surrogate pairs at every piece edge; body and bodyBytes agree`, () => {
  const pair = '\u{1F600}';
  const texts = [
    'plain ASCII "quoted" \\ back',
    'Latin-1: héllo ñ ©',
    'BMP: → 中文 ─',
    `astral: ${pair} 𝄞`,
    'escapes: \u0000 \u001f \u2028 \t\n',
    // UTF-16 is copied out and transcoded in pieces of 65,536 code units: pairs
    // must not be cut at a piece's edge, wherever it falls.
    pair.repeat(40000),
    'a' + pair.repeat(40000),
    'ab' + pair.repeat(70000) + 'z',
  ];
  for (const t of texts) {
    const head = [...t].slice(0, 20).join('');
    const request = { messages: [{ role: 'user', content: t }, { role: 'assistant', content: `echo ${head}` }] };
    const want = JSON.stringify(request);
    for (const input of [want, pkg.fromProvider(want, 'openai')]) {
      const out = pkg.toProvider(input, 'openai');
      // (no diff of texts this long in the output)
      assert.ok(out.body === want, `${head}: body`);
      assert.ok(out.bodyBytes instanceof Uint8Array);
      assert.ok(Buffer.from(out.bodyBytes).equals(Buffer.from(want)), `${head}: bodyBytes`);
      assert.ok(JSON.stringify(out.request) === want, `${head}: request`);
      assert.equal(out.report.compatible, true);
    }
  }
  // The same from a loaded session (its own native decoder in the Node addon).
  const line = (o) => JSON.stringify(o) + '\n';
  const jsonl =
    line({ type: 'session', version: 3, id: 's1', timestamp: '2026-01-01T00:00:00.000Z', cwd: '/' }) +
    texts.map((t, i) => line({ type: 'message', id: `e${i}`, parentId: i ? `e${i - 1}` : null, timestamp: '2026-01-01T00:00:00.000Z', message: { role: 'user', content: t, timestamp: 1 } })).join('');
  const s = fromJsonl(Buffer.from(jsonl));
  const viaSession = s.toProvider('anthropic');
  const viaText = pkg.toProvider(s.getLlmContext(), 'anthropic');
  assert.ok(viaSession.body === viaText.body);
  assert.ok(Buffer.from(viaSession.bodyBytes).equals(Buffer.from(viaText.body)));
  assert.ok(viaSession.body.includes(pair.repeat(100)));
});

test(`[${BACKEND}] requestBuilder: a long conversation's kept part is sent again as the same pieces, and every body is toProvider's`, () => {
  // Each turn brings about 400 KiB: the kept part passes 1 MiB (a sealed
  // piece) after the third, and later builds give that piece's very bytes again.
  const turn = (i) => [
    { role: 'user', content: `question ${i}` },
    { role: 'assistant', api: 'anthropic-messages', provider: 'anthropic', model: 'claude-sonnet-4-5', content: [{ type: 'toolCall', id: `toolu_${i}`, name: 'read', arguments: { path: `f${i}` } }], stopReason: 'toolUse' },
    { role: 'toolResult', toolCallId: `toolu_${i}`, toolName: 'read', content: [{ type: 'text', text: `${i}é"`.repeat(100_000) }], isError: false },
    { role: 'assistant', api: 'anthropic-messages', provider: 'anthropic', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: `answer ${i}` }], stopReason: 'stop' },
  ];
  for (const target of TARGETS) {
    const b = pkg.requestBuilder(target);
    const all = [];
    let last = null;
    let shared = 0;
    const built = [];
    for (let i = 0; i < 6; i++) {
      all.push(...turn(i));
      b.push(turn(i));
      const r = b.build();
      const want = pkg.toProvider(all, target);
      assert.equal(r.bodyParts.reduce((n, p) => n + p.byteLength, 0), want.bodyBytes.byteLength, `${target} ${i}`);
      assert.deepEqual(Buffer.from(r.bodyBytes), Buffer.from(want.bodyBytes), `${target} ${i}: the body`);
      assert.equal(r.body, want.body);
      if (last) shared += r.bodyParts.filter((p) => last.includes(p)).length;
      last = r.bodyParts;
      built.push([r, want]);
    }
    // A build's report and maps are its own, also when read after later builds.
    for (const [r, want] of built) {
      assert.deepEqual(r.report, want.report, `${target}: the report`);
      assert.deepEqual(r.idMap, want.idMap);
      assert.deepEqual(r.nameMap, want.nameMap);
    }
    assert.ok(last.length > 2, `${target}: the body is in parts (${last.length})`);
    assert.ok(shared >= 2, `${target}: later builds gave the kept pieces again (${shared})`);
  }
});
