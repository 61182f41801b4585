// The four providers' wire formats, generated from one abstract turn.
//
// `sse(provider, turn, opts)` gives the exact server-sent events a provider
// streams for that turn, one string per event, framed as the provider frames
// them; `json(provider, turn, opts)` gives the non-streamed response of the
// same turn; `httpError` and `streamError` give the provider's error bodies
// (before and after the 200). The formats follow each provider's API reference
// and SDK stream parsers; see /work/shared/research/streaming.md.
//
// The abstract turn:
//   { text?, thinking?: {text, signature}, toolCalls?: [{id, name, arguments}],
//     usage?: {input, output, cacheRead?, cacheWrite?, reasoning?}, stop? }
// - `arguments` is an object (sent as its JSON text) or a string (sent verbatim,
//   so invalid JSON can be tested).
// - usage.input counts the prompt tokens that were neither read from nor
//   written to the cache (Anthropic's `input_tokens`); providers that count the
//   whole prompt (OpenAI, Gemini) get input + cacheRead + cacheWrite.
//   usage.output counts every generated token, reasoning included (OpenAI's
//   `completion_tokens`); Gemini gets output - reasoning as candidatesTokenCount
//   and reasoning as thoughtsTokenCount.
// - stop: 'end' | 'tool_use' | 'max_tokens' | 'refusal' | a provider's own
//   value (sent verbatim). Default: 'tool_use' when there are tool calls.
//
// opts:
//   pieces      number, or {text, thinking, args}: how many deltas each string
//               is cut into (by code point, never inside a surrogate pair).
//               Default {text: 3, thinking: 2, args: 3}.
//   model       model name in the response (default per provider).
//   ids         {message, response, request, created}: ids of the response.
//   interleave  OpenAI Chat: stream parallel tool calls round-robin by index
//               (default true).
//   includeUsage     OpenAI Chat: send `usage` (null on every chunk, then the
//                    usage chunk with choices: []) (default true).
//   obfuscation      OpenAI: the `obfuscation` padding field on deltas
//                    (default true, as the API sends unless
//                    stream_options.include_obfuscation is false).
//   reasoningField   OpenAI Chat: the delta field carrying reasoning
//                    (default 'reasoning_content', as DeepSeek, vLLM and
//                    LiteLLM send it; OpenAI itself sends none).
//   callIds          Gemini: send functionCall.id (default true, Gemini 3; set
//                    false for older models that send calls without ids).

/** The providers this module speaks. */
export const PROVIDERS = ['anthropic', 'openai', 'openai-responses', 'google'];

const DEFAULT_MODEL = {
  anthropic: 'claude-sonnet-4-5',
  openai: 'gpt-4.1',
  'openai-responses': 'gpt-5',
  google: 'gemini-2.5-flash',
};

/** The default model name of a provider's responses. */
export const defaultModel = (provider) => DEFAULT_MODEL[check(provider)];

function check(provider) {
  if (!PROVIDERS.includes(provider)) throw new Error(`unknown provider ${JSON.stringify(provider)} (one of ${PROVIDERS.join(', ')})`);
  return provider;
}

/** Cuts `s` into `n` pieces of nearly equal length in code points (fewer when `s` is shorter; none when empty). */
export function split(s, n) {
  if (!s) return [];
  const cps = Array.from(s);
  const k = Math.max(1, Math.min(Math.floor(n) || 1, cps.length));
  const out = [];
  for (let i = 0; i < k; i++) out.push(cps.slice(Math.floor((i * cps.length) / k), Math.floor(((i + 1) * cps.length) / k)).join(''));
  return out;
}

function pieceCounts(p) {
  const d = { text: 3, thinking: 2, args: 3 };
  if (typeof p === 'number') return { text: p, thinking: p, args: p };
  return { ...d, ...(p ?? {}) };
}

function norm(turn = {}) {
  const toolCalls = (turn.toolCalls ?? []).map((c) => ({
    id: c.id,
    name: c.name,
    arguments: c.arguments ?? {},
    argsJson: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}),
  }));
  const u = turn.usage ?? {};
  return {
    text: turn.text ?? '',
    thinking: turn.thinking ? { text: turn.thinking.text ?? '', signature: turn.thinking.signature ?? '' } : null,
    toolCalls,
    usage: {
      input: u.input ?? 0,
      output: u.output ?? 0,
      cacheRead: u.cacheRead ?? 0,
      cacheWrite: u.cacheWrite ?? 0,
      reasoning: u.reasoning ?? 0,
    },
    stop: turn.stop ?? (toolCalls.length ? 'tool_use' : 'end'),
  };
}

const STOP = {
  anthropic: { end: 'end_turn', tool_use: 'tool_use', max_tokens: 'max_tokens', refusal: 'refusal' },
  openai: { end: 'stop', tool_use: 'tool_calls', max_tokens: 'length', refusal: 'content_filter' },
  google: { end: 'STOP', tool_use: 'STOP', max_tokens: 'MAX_TOKENS', refusal: 'SAFETY' },
};
const stopOf = (provider, stop) => STOP[provider][stop] ?? stop;

// Gemini parses args JSON text into an object; a string that is not JSON is sent as {"_raw": text}.
function argsObject(c) {
  if (typeof c.arguments !== 'string') return c.arguments;
  try {
    return JSON.parse(c.arguments);
  } catch {
    return { _raw: c.arguments };
  }
}

const named = (event, data) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const dataOnly = (data) => `data: ${JSON.stringify(data)}\n\n`;
// Gemini frames its events with CRLF (its SDK accepts \n\n, \r\r and \r\n\r\n).
const dataCrlf = (data) => `data: ${JSON.stringify(data)}\r\n\r\n`;

function idsOf(provider, opts) {
  const ids = opts.ids ?? {};
  return {
    message: ids.message ?? { anthropic: 'msg_01FkpWire0000000000000001', openai: 'chatcmpl-FkpWire000000000000000001', 'openai-responses': 'resp_fkpwire000000000000000001', google: 'FkpWire0000000000001' }[provider],
    created: ids.created ?? 1767225600,
  };
}

// A deterministic stand-in for OpenAI's random `obfuscation` padding.
function obfuscation(i) {
  const abc = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  let s = '';
  for (let k = 0, x = (i * 2654435761) >>> 0; k < 4 + (i % 9); k++, x = (x * 1103515245 + 12345) >>> 0) s += abc[x % abc.length];
  return s;
}

// ---------------------------------------------------------------- Anthropic

function anthropicUsage(u) {
  return { input_tokens: u.input, cache_creation_input_tokens: u.cacheWrite, cache_read_input_tokens: u.cacheRead, output_tokens: u.output };
}

function anthropicSse(t, opts) {
  const p = pieceCounts(opts.pieces);
  const { message: id } = idsOf('anthropic', opts);
  const model = opts.model ?? DEFAULT_MODEL.anthropic;
  const out = [];
  out.push(named('message_start', {
    type: 'message_start',
    message: {
      id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null,
      usage: { ...anthropicUsage(t.usage), output_tokens: Math.min(1, t.usage.output), service_tier: 'standard' },
    },
  }));
  let index = 0;
  let pinged = false;
  const ping = () => {
    if (!pinged) out.push(named('ping', { type: 'ping' }));
    pinged = true;
  };
  const delta = (delta) => out.push(named('content_block_delta', { type: 'content_block_delta', index, delta }));
  const stopBlock = () => out.push(named('content_block_stop', { type: 'content_block_stop', index: index++ }));
  if (t.thinking) {
    out.push(named('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
    ping();
    for (const s of split(t.thinking.text, p.thinking)) delta({ type: 'thinking_delta', thinking: s });
    // The signature arrives whole, just before the block's content_block_stop.
    if (t.thinking.signature) delta({ type: 'signature_delta', signature: t.thinking.signature });
    stopBlock();
  }
  if (t.text || (!t.thinking && !t.toolCalls.length)) {
    out.push(named('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }));
    ping();
    for (const s of split(t.text, p.text)) delta({ type: 'text_delta', text: s });
    stopBlock();
  }
  t.toolCalls.forEach((c, i) => {
    out.push(named('content_block_start', {
      type: 'content_block_start', index, content_block: { type: 'tool_use', id: c.id ?? `toolu_01FkpWire${String(i).padStart(14, '0')}`, name: c.name, input: {} },
    }));
    ping();
    // The first input_json_delta is empty, as the API sends it.
    delta({ type: 'input_json_delta', partial_json: '' });
    for (const s of split(c.argsJson, p.args)) delta({ type: 'input_json_delta', partial_json: s });
    stopBlock();
  });
  out.push(named('message_delta', {
    type: 'message_delta', delta: { stop_reason: stopOf('anthropic', t.stop), stop_sequence: null }, usage: { output_tokens: t.usage.output },
  }));
  out.push(named('message_stop', { type: 'message_stop' }));
  return out;
}

function anthropicJson(t, opts) {
  const content = [];
  if (t.thinking) content.push({ type: 'thinking', thinking: t.thinking.text, signature: t.thinking.signature });
  if (t.text || (!t.thinking && !t.toolCalls.length)) content.push({ type: 'text', text: t.text });
  t.toolCalls.forEach((c, i) => content.push({ type: 'tool_use', id: c.id ?? `toolu_01FkpWire${String(i).padStart(14, '0')}`, name: c.name, input: argsObject(c) }));
  return {
    id: idsOf('anthropic', opts).message, type: 'message', role: 'assistant', model: opts.model ?? DEFAULT_MODEL.anthropic, content,
    stop_reason: stopOf('anthropic', t.stop), stop_sequence: null, usage: { ...anthropicUsage(t.usage), service_tier: 'standard' },
  };
}

// -------------------------------------------------------- OpenAI Chat Completions

function chatUsage(u) {
  const prompt = u.input + u.cacheRead + u.cacheWrite;
  return {
    prompt_tokens: prompt, completion_tokens: u.output, total_tokens: prompt + u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

function openaiSse(t, opts) {
  const p = pieceCounts(opts.pieces);
  const { message: id, created } = idsOf('openai', opts);
  const model = opts.model ?? DEFAULT_MODEL.openai;
  const includeUsage = opts.includeUsage ?? true;
  const obf = opts.obfuscation ?? true;
  const rf = opts.reasoningField ?? 'reasoning_content';
  const out = [];
  let n = 0;
  const chunk = (choices, usage) => {
    const c = { id, object: 'chat.completion.chunk', created, model, service_tier: 'default', system_fingerprint: 'fp_fkpwire01', choices };
    if (includeUsage) c.usage = usage ?? null;
    if (obf) c.obfuscation = obfuscation(n);
    n++;
    out.push(dataOnly(c));
  };
  const delta = (d, finish = null) => chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  delta({ role: 'assistant', content: '', refusal: null });
  if (t.thinking) for (const s of split(t.thinking.text, p.thinking)) delta({ [rf]: s });
  for (const s of split(t.text, p.text)) delta({ content: s });
  // Tool calls are keyed by index; only the first piece of each carries id, type and name.
  const calls = t.toolCalls.map((c, i) => ({
    head: { index: i, id: c.id ?? `call_FkpWire${String(i).padStart(17, '0')}`, type: 'function', function: { name: c.name, arguments: '' } },
    pieces: split(c.argsJson, p.args),
  }));
  const piece = (i, s) => delta({ tool_calls: [{ index: i, function: { arguments: s } }] });
  if (opts.interleave ?? true) {
    calls.forEach((c) => delta({ tool_calls: [c.head] }));
    const rounds = Math.max(0, ...calls.map((c) => c.pieces.length));
    for (let r = 0; r < rounds; r++) calls.forEach((c, i) => r < c.pieces.length && piece(i, c.pieces[r]));
  } else {
    calls.forEach((c, i) => {
      delta({ tool_calls: [c.head] });
      c.pieces.forEach((s) => piece(i, s));
    });
  }
  delta({}, stopOf('openai', t.stop));
  if (includeUsage) chunk([], chatUsage(t.usage));
  out.push('data: [DONE]\n\n');
  return out;
}

function openaiJson(t, opts) {
  const { message: id, created } = idsOf('openai', opts);
  const message = { role: 'assistant', content: t.text || (t.toolCalls.length ? null : ''), refusal: null, annotations: [] };
  if (t.thinking) message[opts.reasoningField ?? 'reasoning_content'] = t.thinking.text;
  if (t.toolCalls.length) {
    message.tool_calls = t.toolCalls.map((c, i) => ({
      id: c.id ?? `call_FkpWire${String(i).padStart(17, '0')}`, type: 'function', function: { name: c.name, arguments: c.argsJson },
    }));
  }
  return {
    id, object: 'chat.completion', created, model: opts.model ?? DEFAULT_MODEL.openai,
    choices: [{ index: 0, message, logprobs: null, finish_reason: stopOf('openai', t.stop) }],
    usage: chatUsage(t.usage), service_tier: 'default', system_fingerprint: 'fp_fkpwire01',
  };
}

// ----------------------------------------------------------- OpenAI Responses

function responsesUsage(u) {
  const input = u.input + u.cacheRead + u.cacheWrite;
  return {
    input_tokens: input, input_tokens_details: { cached_tokens: u.cacheRead },
    output_tokens: u.output, output_tokens_details: { reasoning_tokens: u.reasoning }, total_tokens: input + u.output,
  };
}

function responseObject(opts, status, output, usage, extra = {}) {
  const { message: id, created } = idsOf('openai-responses', opts);
  return {
    id, object: 'response', created_at: created, status, background: false, error: null, incomplete_details: null,
    instructions: null, max_output_tokens: null, model: opts.model ?? DEFAULT_MODEL['openai-responses'], output,
    parallel_tool_calls: true, previous_response_id: null, reasoning: { effort: 'medium', summary: 'auto' },
    service_tier: 'default', store: false, temperature: 1, text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto', tools: [], top_p: 1, truncation: 'disabled', usage, user: null, metadata: {}, ...extra,
  };
}

// The output items of a finished turn, in stream order.
function responsesItems(t, opts) {
  const rid = idsOf('openai-responses', opts).message.replace(/^resp_/, '');
  const items = [];
  if (t.thinking) {
    const item = { id: `rs_${rid}`, type: 'reasoning', summary: t.thinking.text ? [{ type: 'summary_text', text: t.thinking.text }] : [] };
    if (t.thinking.signature) item.encrypted_content = t.thinking.signature;
    items.push(item);
  }
  if (t.text || (!t.thinking && !t.toolCalls.length)) {
    items.push({
      id: `msg_${rid}`, type: 'message', status: 'completed', role: 'assistant',
      content: [{ type: 'output_text', annotations: [], logprobs: [], text: t.text }],
    });
  }
  t.toolCalls.forEach((c, i) => items.push({
    id: `fc_${rid}_${i}`, type: 'function_call', status: 'completed', arguments: c.argsJson,
    call_id: c.id ?? `call_FkpWire${String(i).padStart(17, '0')}`, name: c.name,
  }));
  return items;
}

function responsesFinal(t, opts) {
  const items = responsesItems(t, opts);
  const incomplete = t.stop === 'max_tokens';
  return responseObject(opts, incomplete ? 'incomplete' : 'completed', items, responsesUsage(t.usage),
    incomplete ? { incomplete_details: { reason: 'max_output_tokens' } } : {});
}

function responsesSse(t, opts) {
  const p = pieceCounts(opts.pieces);
  const obf = opts.obfuscation ?? true;
  const out = [];
  let seq = 0;
  const ev = (type, data) => out.push(named(type, { type, sequence_number: seq++, ...data }));
  const withObf = (d) => (obf ? { ...d, obfuscation: obfuscation(seq) } : d);
  ev('response.created', { response: responseObject(opts, 'in_progress', [], null) });
  ev('response.in_progress', { response: responseObject(opts, 'in_progress', [], null) });
  responsesItems(t, opts).forEach((item, output_index) => {
    const item_id = item.id;
    if (item.type === 'reasoning') {
      ev('response.output_item.added', { output_index, item: { id: item.id, type: 'reasoning', summary: [] } });
      if (t.thinking.text) {
        const summary_index = 0;
        ev('response.reasoning_summary_part.added', { item_id, output_index, summary_index, part: { type: 'summary_text', text: '' } });
        for (const s of split(t.thinking.text, p.thinking)) ev('response.reasoning_summary_text.delta', withObf({ item_id, output_index, summary_index, delta: s }));
        ev('response.reasoning_summary_text.done', { item_id, output_index, summary_index, text: t.thinking.text });
        ev('response.reasoning_summary_part.done', { item_id, output_index, summary_index, part: { type: 'summary_text', text: t.thinking.text } });
      }
      ev('response.output_item.done', { output_index, item });
    } else if (item.type === 'message') {
      ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
      const content_index = 0;
      ev('response.content_part.added', { item_id, output_index, content_index, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } });
      for (const s of split(t.text, p.text)) ev('response.output_text.delta', withObf({ item_id, output_index, content_index, delta: s, logprobs: [] }));
      ev('response.output_text.done', { item_id, output_index, content_index, text: t.text, logprobs: [] });
      ev('response.content_part.done', { item_id, output_index, content_index, part: item.content[0] });
      ev('response.output_item.done', { output_index, item });
    } else {
      ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } });
      for (const s of split(item.arguments, p.args)) ev('response.function_call_arguments.delta', withObf({ item_id, output_index, delta: s }));
      ev('response.function_call_arguments.done', { item_id, output_index, arguments: item.arguments });
      ev('response.output_item.done', { output_index, item });
    }
  });
  const final = responsesFinal(t, opts);
  ev(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
  return out;
}

// -------------------------------------------------------------------- Gemini

function geminiUsage(u, final) {
  const prompt = u.input + u.cacheRead + u.cacheWrite;
  if (!final) return { promptTokenCount: prompt, totalTokenCount: prompt, promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }] };
  const m = {
    promptTokenCount: prompt,
    candidatesTokenCount: u.output - u.reasoning,
    totalTokenCount: prompt + u.output,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
  if (u.cacheRead) m.cachedContentTokenCount = u.cacheRead;
  if (u.reasoning) m.thoughtsTokenCount = u.reasoning;
  return m;
}

function geminiCallPart(c, opts) {
  const functionCall = { name: c.name, args: argsObject(c) };
  if ((opts.callIds ?? true) && c.id) functionCall.id = c.id;
  return { functionCall };
}

// Gemini chunks: one per thought piece, one per text piece, and a last one that
// holds every function call whole (with the finish reason and full usage).
// `thoughtSignature` sits on the first functionCall part, or else on the last
// text part (an empty text part when there is no text).
function googleChunks(t, opts) {
  const p = pieceCounts(opts.pieces);
  const { message: responseId } = idsOf('google', opts);
  const modelVersion = opts.model ?? DEFAULT_MODEL.google;
  const parts = [];
  if (t.thinking) for (const s of split(t.thinking.text, p.thinking)) parts.push([{ text: s, thought: true }]);
  const texts = split(t.text, p.text).map((s) => [{ text: s }]);
  const sig = t.thinking?.signature;
  if (t.toolCalls.length) {
    const calls = t.toolCalls.map((c) => geminiCallPart(c, opts));
    if (sig) calls[0].thoughtSignature = sig;
    parts.push(...texts, calls);
  } else {
    if (!texts.length && (sig || !parts.length)) texts.push([{ text: '' }]);
    if (sig) texts[texts.length - 1][0].thoughtSignature = sig;
    parts.push(...texts);
  }
  return parts.map((ps, i) => {
    const last = i === parts.length - 1;
    const cand = { content: { parts: ps, role: 'model' }, index: 0 };
    if (last) cand.finishReason = stopOf('google', t.stop);
    return { candidates: [cand], usageMetadata: geminiUsage(t.usage, last), modelVersion, responseId };
  });
}

function googleJson(t, opts) {
  const chunks = googleChunks(t, { ...opts, pieces: 1 });
  const parts = chunks.flatMap((c) => c.candidates[0].content.parts);
  const last = chunks[chunks.length - 1];
  return { ...last, candidates: [{ ...last.candidates[0], content: { parts, role: 'model' } }] };
}

// -------------------------------------------------------------------- public

/**
 * The exact SSE byte stream of `turn` as `provider` sends it, one string per
 * event (`event: …\ndata: …\n\n`, `data: …\n\n`, or Gemini's `data: …\r\n\r\n`).
 */
export function sse(provider, turn, opts = {}) {
  const t = norm(turn);
  switch (check(provider)) {
    case 'anthropic': return anthropicSse(t, opts);
    case 'openai': return openaiSse(t, opts);
    case 'openai-responses': return responsesSse(t, opts);
    case 'google': return googleChunks(t, opts).map(dataCrlf);
  }
}

/** The parsed JSON of each event of `sse(...)` (Gemini chunks, OpenAI chunks without `[DONE]`). */
export function events(provider, turn, opts = {}) {
  return sse(provider, turn, opts).filter((e) => !e.startsWith('data: [DONE]')).map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)));
}

/** The non-streamed JSON response of the same turn (POST with stream off, or Gemini's :generateContent). */
export function json(provider, turn, opts = {}) {
  const t = norm(turn);
  switch (check(provider)) {
    case 'anthropic': return anthropicJson(t, opts);
    case 'openai': return openaiJson(t, opts);
    case 'openai-responses': return responsesFinal(t, opts);
    case 'google': return googleJson(t, opts);
  }
}

// -------------------------------------------------------------------- errors

const ANTHROPIC_ERRORS = {
  400: ['invalid_request_error', 'messages: field required'],
  401: ['authentication_error', 'invalid x-api-key'],
  403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: ['not_found_error', 'Not Found'],
  413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: ['rate_limit_error', 'This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the number of requests or try again later.'],
  500: ['api_error', 'Internal server error'],
  529: ['overloaded_error', 'Overloaded'],
};
const OPENAI_ERRORS = {
  400: ['invalid_request_error', "Invalid value for 'messages': expected an array.", 'messages', null],
  401: ['invalid_request_error', 'Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.', null, 'invalid_api_key'],
  403: ['invalid_request_error', 'Project does not have access to this model.', null, 'model_not_found'],
  404: ['invalid_request_error', 'The model `missing` does not exist or you do not have access to it.', null, 'model_not_found'],
  429: ['requests', 'Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms. Visit https://platform.openai.com/account/rate-limits to learn more.', null, 'rate_limit_exceeded'],
  500: ['server_error', 'The server had an error while processing your request. Sorry about that!', null, null],
  503: ['server_error', 'The engine is currently overloaded, please try again later.', null, null],
};
const GOOGLE_ERRORS = {
  400: ['INVALID_ARGUMENT', 'Request contains an invalid argument.'],
  401: ['UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.'],
  403: ['PERMISSION_DENIED', "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."],
  404: ['NOT_FOUND', 'models/missing is not found for API version v1beta, or is not supported for generateContent.'],
  429: ['RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.'],
  500: ['INTERNAL', 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting'],
  503: ['UNAVAILABLE', 'The model is overloaded. Please try again later.'],
  504: ['DEADLINE_EXCEEDED', 'Deadline expired before operation could complete.'],
};

/** The error object (the part inside `{"error": …}`) of a provider for an HTTP status. */
function errorObject(provider, status, o = {}) {
  switch (check(provider)) {
    case 'anthropic': {
      const [type, message] = ANTHROPIC_ERRORS[status] ?? (status >= 500 ? ANTHROPIC_ERRORS[500] : ANTHROPIC_ERRORS[400]);
      return { type: o.type ?? type, message: o.message ?? message };
    }
    case 'openai':
    case 'openai-responses': {
      const [type, message, param, code] = OPENAI_ERRORS[status] ?? (status >= 500 ? OPENAI_ERRORS[500] : OPENAI_ERRORS[400]);
      return { message: o.message ?? message, type: o.type ?? type, param: o.param !== undefined ? o.param : param, code: o.code !== undefined ? o.code : code };
    }
    case 'google': {
      const [st, message] = GOOGLE_ERRORS[status] ?? (status >= 500 ? GOOGLE_ERRORS[500] : GOOGLE_ERRORS[400]);
      const e = { code: status, message: o.message ?? message, status: o.type ?? st };
      if (o.details) e.details = o.details;
      return e;
    }
  }
}

/**
 * An HTTP error response as the provider sends it: `{status, headers, body}`
 * (body is the object to serialize). `o`: {message, type, retryAfter (seconds),
 * requestId, param, code, details}.
 * - Anthropic: `{"type":"error","error":{type,message},"request_id"}` and a
 *   `request-id` header; 429 and 529 carry `retry-after`.
 * - OpenAI (both APIs): `{"error":{message,type,param,code}}` and `x-request-id`;
 *   429 carries `retry-after` and the x-ratelimit-* headers.
 * - Gemini: `{"error":{code,message,status,details?}}` (google.rpc.Status); a
 *   429 states its delay as a `google.rpc.RetryInfo` detail (`"retryDelay": "Ns"`),
 *   and also in a `retry-after` header only when `o.retryAfterHeader` is set.
 */
export function httpError(provider, status, o = {}) {
  const requestId = o.requestId ?? 'req_011CFkpWire000000000001';
  const retryAfter = o.retryAfter ?? (status === 429 ? 1 : undefined);
  switch (check(provider)) {
    case 'anthropic': {
      const headers = { 'content-type': 'application/json', 'request-id': requestId, 'x-should-retry': String(status === 429 || status >= 500) };
      if (retryAfter !== undefined && (status === 429 || status >= 500)) headers['retry-after'] = String(retryAfter);
      if (status === 429) {
        Object.assign(headers, {
          'anthropic-ratelimit-requests-limit': '50',
          'anthropic-ratelimit-requests-remaining': '0',
          'anthropic-ratelimit-requests-reset': new Date(Date.now() + (retryAfter ?? 1) * 1000).toISOString().replace(/\.\d+Z$/, 'Z'),
        });
      }
      return { status, headers, body: { type: 'error', error: errorObject(provider, status, o), request_id: requestId } };
    }
    case 'openai':
    case 'openai-responses': {
      const headers = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId, 'openai-version': '2020-10-01', 'openai-processing-ms': '7' };
      if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
      if (status === 429) {
        Object.assign(headers, {
          'x-ratelimit-limit-requests': '500', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': `${retryAfter ?? 1}s`,
          'x-ratelimit-limit-tokens': '30000', 'x-ratelimit-remaining-tokens': '29000', 'x-ratelimit-reset-tokens': '2ms',
        });
      }
      return { status, headers, body: { error: errorObject(provider, status, o) } };
    }
    case 'google': {
      const headers = { 'content-type': 'application/json; charset=UTF-8', vary: 'Origin, X-Origin, Referer', server: 'scaffolding on HTTPServer2', 'x-content-type-options': 'nosniff' };
      const details = o.details ?? (status === 429 ? [
        { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests', quotaId: 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier' }] },
        { '@type': 'type.googleapis.com/google.rpc.Help', links: [{ description: 'Learn more about Gemini API quotas', url: 'https://ai.google.dev/gemini-api/docs/rate-limits' }] },
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfter}s` },
      ] : undefined);
      if (o.retryAfterHeader && retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
      return { status, headers, body: { error: errorObject(provider, status, { ...o, details }) } };
    }
  }
}

/**
 * The bytes of the provider's documented error after a 200 (mid-stream).
 * `o`: {status, type, message, kind, sequenceNumber, model, ids}.
 * - Anthropic: `event: error` with `{"type":"error","error":{type,message}}`
 *   (default overloaded_error).
 * - OpenAI Chat: a data chunk `{"error":{message,type,param,code}}` (the SDK
 *   throws on any chunk with `error`).
 * - Responses: `kind: 'error'` (default): `event: error` with
 *   `{type:'error',code,message,param,sequence_number}`; `kind: 'failed'`:
 *   `response.failed` with the response, status 'failed' and `error:{code,message}`.
 * - Gemini: `kind: 'raw'` (default): the google.rpc.Status JSON, pretty-printed
 *   and outside SSE framing, as Gemini writes it before closing; `kind: 'sse'`:
 *   the same object as a `data:` event.
 */
export function streamError(provider, o = {}) {
  switch (check(provider)) {
    case 'anthropic': {
      const status = o.status ?? 529;
      return named('error', { type: 'error', error: errorObject(provider, status, o) });
    }
    case 'openai':
      return dataOnly({ error: errorObject(provider, o.status ?? 500, o) });
    case 'openai-responses': {
      const message = o.message ?? 'An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists.';
      const code = o.code ?? o.type ?? 'server_error';
      const sequence_number = o.sequenceNumber ?? 0;
      if (o.kind === 'failed') {
        return named('response.failed', {
          type: 'response.failed', sequence_number, response: responseObject(o, 'failed', [], null, { error: { code, message } }),
        });
      }
      return named('error', { type: 'error', code, message, param: null, sequence_number });
    }
    case 'google': {
      const body = { error: errorObject(provider, o.status ?? 503, o) };
      return o.kind === 'sse' ? dataCrlf(body) : `${JSON.stringify(body, null, 2)}\n`;
    }
  }
}

/** The response headers of a 200 stream (or, with `json`, a 200 JSON body) as the provider sends them. */
export function okHeaders(provider, { requestId = 'req_011CFkpWire000000000001', json: isJson = false } = {}) {
  switch (check(provider)) {
    case 'anthropic':
      return {
        'content-type': isJson ? 'application/json' : 'text/event-stream; charset=utf-8',
        ...(isJson ? {} : { 'cache-control': 'no-cache' }),
        'request-id': requestId, 'anthropic-organization-id': '00000000-0000-4000-8000-00000000f0f0', 'x-robots-tag': 'none',
      };
    case 'openai':
    case 'openai-responses':
      return {
        'content-type': isJson ? 'application/json' : 'text/event-stream; charset=utf-8',
        'x-request-id': requestId, 'openai-version': '2020-10-01', 'openai-processing-ms': '112', 'openai-organization': 'user-fkpwire',
        'x-ratelimit-limit-requests': '500', 'x-ratelimit-remaining-requests': '499', 'x-ratelimit-reset-requests': '120ms',
      };
    case 'google':
      return {
        'content-type': isJson ? 'application/json; charset=UTF-8' : 'text/event-stream',
        vary: 'Origin, X-Origin, Referer', server: 'scaffolding on HTTPServer2', 'x-content-type-options': 'nosniff',
        'x-xss-protection': '0', 'x-frame-options': 'SAMEORIGIN', 'server-timing': 'gfet4t7; dur=512',
      };
  }
}
