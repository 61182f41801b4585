// Renders a context (pi `AgentMessage`s) as HTML: text, thinking folded in a
// <details>, tool calls with their arguments, tool results (each linked to
// its call), images. Stored messages may have any shape the core accepts
// (content that is a string, blocks, an object, null, a number; blocks of
// unknown types or with fields of other types): strings are drawn as text,
// blocks as blocks, anything else as folded JSON, and a message that cannot
// be drawn anyway gets a small box with its JSON instead of stopping the rest.

/** Messages drawn at first, and drawn by each "show earlier". */
const FIRST_PAGE = 300;
/** A text longer than this is drawn in pages (see textBlock): the first at first, more with "show next" or "show all". */
const FIRST_TEXT = 20_000;
/** Characters of a text in one page, at most (one block laid out on its own). */
export const PAGE = 20_000;
/** Characters one "show next" adds, at most (MORE_TEXT / PAGE pages). */
const MORE_TEXT = 100_000;
/** A tool result longer than this (characters or lines) starts folded. */
const LONG_RESULT = 1_200;
const LONG_RESULT_LINES = 16;

/**
 * What the messages of one context know of each other: where each tool call
 * and each tool result is, and how to scroll to one.
 * @typedef {{ calls: Map<string, number>, results: Map<string, number>, go: (selector: string) => void }} Links
 */

/** Creates an HTML element with attributes, class and children. */
export function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = String(v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}

/** Replaces the children of `target`, skipping null, undefined and false. */
export function fill(target, ...children) {
  target.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
}

/** A JSON object (not an array, not null). */
export const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `v` as JSON text (`indent` as for JSON.stringify); never throws. */
export function toJson(v, indent) {
  try {
    return JSON.stringify(v, null, indent) ?? String(v);
  } catch {
    return String(v);
  }
}

/** Any stored value as text: strings as they are, null and undefined as nothing, numbers and booleans written out, the rest as JSON. */
export function asText(v) {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return toJson(v);
  return String(v);
}

/** A string, number or boolean (drawn as text); anything else is drawn as JSON. */
const isScalar = (v) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/**
 * Where the page of `s` that starts at `from` ends: PAGE characters on, moved
 * back to just after a line break (or else a space) in the page's second
 * half, so that pages meet where the text breaks anyway; never inside a
 * surrogate pair.
 */
function pageEnd(s, from) {
  const end = from + PAGE;
  if (end >= s.length) return s.length;
  // Searched in the second half only (lastIndexOf on `s` would scan back to its start).
  const half = from + PAGE / 2;
  const tail = s.slice(half, end);
  const nl = tail.lastIndexOf('\n');
  if (nl >= 0) return half + nl + 1;
  const sp = tail.lastIndexOf(' ');
  if (sp >= 0) return half + sp + 1;
  const c = s.charCodeAt(end - 1);
  return c >= 0xd800 && c <= 0xdbff ? end - 1 : end;
}

/**
 * Appends to `target` the text `s` from `from` on, `pages` pages of it (all
 * of the rest if Infinity), each an element of class `page` (`tag`); returns
 * where the drawing stopped. CSS lays out each page after the first only
 * while it is near the view (`content-visibility`), until then giving it the
 * height of its lines, guessed here. A long paragraph costs the browser more
 * than its length (a 1 MB line of CJK text took over a minute in one block),
 * so pages also keep each paragraph short.
 */
export function appendPages(target, s, from, pages, tag = 'div') {
  const els = [];
  let drawn = from;
  for (let k = 0; k < pages && drawn < s.length; k++) {
    const end = pageEnd(s, drawn);
    const page = document.createElement(tag);
    page.className = 'page';
    page.textContent = s.slice(drawn, end);
    if (drawn > 0) page.style.containIntrinsicBlockSize = `auto ${(guessLines(s, drawn, end) * 1.45).toFixed(1)}em`;
    els.push(page);
    drawn = end;
  }
  target.append(...els);
  return drawn;
}

/**
 * Text in a pre-wrapped block. A text longer than FIRST_TEXT characters is
 * drawn in pages of about PAGE characters, each its own block that the
 * browser lays out only while it is near the view (`content-visibility`), so
 * a text of megabytes costs no more to show than the pages on screen: the
 * first page at first, then "show next …" and "show all" add the rest.
 * The block's textContent is always exactly the text drawn so far.
 */
function textBlock(text, cls = 'text') {
  const s = asText(text);
  const div = h('div', { class: cls });
  if (s.length <= FIRST_TEXT) {
    div.textContent = s;
    return div;
  }
  div.classList.add('paged');
  div.dataset.testid = 'long-text';
  div.dataset.length = String(s.length);
  let drawn = 0;
  /** Appends `pages` pages (all of the rest if Infinity). */
  const draw = (pages) => {
    drawn = appendPages(div, s, drawn, pages);
    div.dataset.drawn = String(drawn);
    const left = s.length - drawn;
    if (left <= 0) {
      bar.remove();
      return;
    }
    next.hidden = left <= MORE_TEXT;
    all.textContent = `show all ${s.length.toLocaleString()} characters (${fmtChars(left)} more)`;
  };
  const next = h('button', { class: 'more', type: 'button', 'data-testid': 'show-next', onclick: () => draw(MORE_TEXT / PAGE) }, `show next ${fmtChars(MORE_TEXT)}`);
  const all = h('button', { class: 'more', type: 'button', 'data-testid': 'show-all', onclick: () => draw(Infinity) });
  const bar = h('div', { class: 'more-bar' }, next, ' ', all);
  draw(1);
  return h('div', { class: 'long' }, div, bar);
}

/** Lines of s[from, end) on a screen: its line breaks, and a wrap every 100 characters. */
function guessLines(s, from, end) {
  let lines = 0;
  for (let i = from; i < end; ) {
    const nl = s.indexOf('\n', i);
    const stop = nl < 0 || nl >= end ? end : nl;
    lines += Math.max(1, Math.ceil((stop - i) / 100));
    i = stop + 1;
  }
  return lines;
}

/** "20 K characters", "1.2 M characters". */
const fmtChars = (n) => (n < 1_000_000 ? `${Math.max(1, Math.round(n / 1000)).toLocaleString()} K characters` : `${(n / 1_000_000).toFixed(1)} M characters`);

function json(v) {
  return textBlock(toJson(v, 2), 'code');
}

/**
 * A value of a shape the page has no drawing for (content that is an object or
 * a number, a block that is not an object…): folded, as indented JSON, with
 * its first characters in the summary.
 */
function rawJson(what, v) {
  const line = toJson(v);
  return h(
    'details',
    { class: 'raw', 'data-testid': 'raw-json' },
    h('summary', {}, `${what} `, h('code', {}, line.length > 100 ? `${line.slice(0, 100)}…` : line)),
    json(v),
  );
}

/** A link (a button: the URL's hash is the open session) to another message of the context. */
function jump(text, title, selector, links) {
  return h('button', { type: 'button', class: 'link jump', title, 'data-testid': 'jump', onclick: () => links?.go(selector) }, text);
}

const callSel = (id) => `[data-tool-call-id="${CSS.escape(id)}"]`;
const resultSel = (id) => `[data-tool-result-for="${CSS.escape(id)}"]`;
/** A tool call id the page links by (a non-empty string), or undefined. */
const linkId = (id) => (typeof id === 'string' && id ? id : undefined);

/** Lines in `s` (counted, not split: `s` may be megabytes). */
function lineCount(s) {
  let n = 1;
  for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

/** A tool result's text: a scrolling monospace box, folded when long. */
function toolOutput(text) {
  const s = asText(text);
  const box = textBlock(s, 'code output');
  if (s.length <= LONG_RESULT && lineCount(s) <= LONG_RESULT_LINES) return box;
  const lines = lineCount(s);
  const first = s.slice(0, 1000).trimStart().split('\n')[0];
  return h(
    'details',
    { class: 'tool-output', 'data-testid': 'tool-output' },
    h('summary', {}, `Output · ${lines.toLocaleString()} ${lines === 1 ? 'line' : 'lines'} · ${s.length.toLocaleString()} characters `, h('code', {}, first.length > 100 ? `${first.slice(0, 100)}…` : first)),
    box,
  );
}

/** A tool call's arguments: JSON (a string holding JSON is shown indented, any other string as it is). */
function toolArguments(args) {
  if (args === undefined) return json({});
  if (typeof args !== 'string') return json(args);
  try {
    return json(JSON.parse(args));
  } catch {
    return textBlock(args, 'code');
  }
}

/** One content block (any value: a block of any type, or not a block at all). @param {Links} [links] */
function block(b, links) {
  if (typeof b === 'string') return textBlock(b);
  if (!isObject(b)) return rawJson('block', b);
  switch (b.type) {
    case 'text':
      return isScalar(b.text) || b.text == null ? textBlock(b.text) : rawJson('text block', b);
    case 'thinking':
      return h(
        'details',
        { class: 'thinking', 'data-testid': 'thinking' },
        h('summary', {}, b.redacted ? 'Thinking (redacted)' : `Thinking · ${asText(b.thinking).length.toLocaleString()} characters`),
        textBlock(b.thinking),
      );
    case 'toolCall': {
      const id = linkId(b.id);
      const result = id ? links?.results.get(id) : undefined;
      return h(
        'details',
        { class: 'tool-call', 'data-testid': 'tool-call', 'data-tool-call-id': id ?? null, open: true },
        h(
          'summary',
          {},
          h('span', { class: 'badge' }, 'tool call'),
          ' ',
          h('code', {}, asText(b.name)),
          h('span', { class: 'muted' }, ` ${asText(b.id)} `),
          result !== undefined ? jump(`→ result #${result + 1}`, 'Show the result of this call', resultSel(id), links) : h('span', { class: 'muted' }, '(no result in this context)'),
        ),
        toolArguments(b.arguments),
      );
    }
    case 'image':
      return typeof b.data === 'string' && b.data && typeof b.mimeType === 'string' && /^image\/[\w.+-]+$/.test(b.mimeType)
        ? h('img', { class: 'image', alt: 'image', src: `data:${b.mimeType};base64,${b.data}` })
        : h('div', { class: 'muted' }, `[image${typeof b.mimeType === 'string' && b.mimeType ? ` ${b.mimeType}` : ''}]`);
    default:
      return rawJson(`${asText(b.type) || 'untyped'} block`, b);
  }
}

/** A message's content: a string as text, blocks one by one, nothing as "(no content)", anything else as JSON. */
function content(c, links) {
  if (typeof c === 'string') return [textBlock(c)];
  if (Array.isArray(c)) return c.map((b) => block(b, links));
  if (c === null || c === undefined) return [h('div', { class: 'muted' }, '(no content)')];
  return [rawJson('content', c)];
}

/** A tool result's content: text as output boxes, other blocks as usual. */
function resultContent(c) {
  if (typeof c === 'string') return [toolOutput(c)];
  if (!Array.isArray(c)) return content(c);
  return c.map((b) => (typeof b === 'string' ? toolOutput(b) : isObject(b) && b.type === 'text' && (isScalar(b.text) || b.text == null) ? toolOutput(b.text) : block(b)));
}

/** A `<time>` for a message's timestamp (ms or ISO text), or the value as it is when it is no date. */
function time(ts) {
  const d = typeof ts === 'number' || typeof ts === 'string' ? new Date(ts) : null;
  if (!d || Number.isNaN(d.getTime())) return h('span', { class: 'muted', title: 'timestamp' }, asText(ts));
  return h('time', { class: 'muted', datetime: d.toISOString() }, d.toLocaleString());
}

const ROLE_NAMES = {
  user: 'User',
  assistant: 'Assistant',
  toolResult: 'Tool result',
  bashExecution: 'Shell',
  custom: 'Custom',
  branchSummary: 'Branch summary',
  compactionSummary: 'Compaction summary',
};

/** A message's role as text ('?' when it has none). */
const roleOf = (m) => (isObject(m) && m.role !== undefined && m.role !== null ? asText(m.role) : '?');

/** One message as an <article data-testid="context-message" data-role=…>. @param {Links} [links] */
export function message(m, index, links) {
  if (!isObject(m)) return broken(m, index, null);
  const role = roleOf(m);
  const head = h('header', {}, h('span', { class: 'role' }, Object.hasOwn(ROLE_NAMES, role) ? ROLE_NAMES[role] : role), h('span', { class: 'index' }, `#${index + 1}`));
  let body;
  switch (m.role) {
    case 'assistant':
      if (m.model) head.append(h('span', { class: 'muted' }, `${asText(m.provider)} · ${asText(m.model)}`));
      if (m.stopReason && m.stopReason !== 'stop' && m.stopReason !== 'toolUse') head.append(h('span', { class: 'badge warn' }, asText(m.stopReason)));
      body = content(m.content, links);
      if (m.errorMessage) body.push(h('div', { class: 'error-text' }, asText(m.errorMessage)));
      break;
    case 'toolResult': {
      const id = linkId(m.toolCallId);
      const call = id ? links?.calls.get(id) : undefined;
      head.append(
        h('span', { class: 'muted' }, 'of'),
        h('code', {}, asText(m.toolName)),
        call !== undefined ? jump(`↩ call in #${call + 1}`, `Show the call (${id})`, callSel(id), links) : h('span', { class: 'muted' }, asText(m.toolCallId)),
      );
      if (m.isError) head.append(h('span', { class: 'badge warn' }, 'error'));
      body = resultContent(m.content);
      break;
    }
    case 'bashExecution':
      head.append(h('span', { class: m.exitCode === 0 ? 'muted' : 'badge warn' }, `exit ${asText(m.exitCode) || '?'}`));
      body = [textBlock(`$ ${asText(m.command)}`, 'code'), m.output ? textBlock(m.output, 'code') : h('div', { class: 'muted' }, '(no output)')];
      break;
    case 'custom':
      head.append(h('code', {}, asText(m.customType)));
      body = content(m.content);
      break;
    case 'branchSummary':
    case 'compactionSummary':
      if (m.tokensBefore) head.append(h('span', { class: 'muted' }, `${typeof m.tokensBefore === 'number' ? m.tokensBefore.toLocaleString() : asText(m.tokensBefore)} tokens before`));
      body = [textBlock(m.summary)];
      break;
    default:
      body = content(m.content);
  }
  if (m.timestamp) head.append(time(m.timestamp));
  const id = m.role === 'toolResult' ? linkId(m.toolCallId) : undefined;
  return h(
    'article',
    { class: `msg role-${role.replace(/[^\w-]+/g, '-')}${m.isError ? ' is-error' : ''}`, 'data-testid': 'context-message', 'data-role': role, 'data-tool-result-for': id ?? null },
    head,
    ...body,
  );
}

/**
 * What is drawn for a message the page could not draw (`error`), or for a
 * context item that is no message object (`error` null): a small box saying
 * so, with the item as JSON. The rest of the context is drawn as usual.
 */
function broken(m, index, error) {
  return h(
    'article',
    { class: 'msg broken', 'data-testid': 'context-message', 'data-role': roleOf(m), 'data-render-error': error ? 'true' : null },
    h('header', {}, h('span', { class: 'role' }, error ? 'Cannot render' : 'Not a message'), h('span', { class: 'index' }, `#${index + 1}`)),
    error ? h('div', { class: 'error-text', 'data-testid': 'render-error' }, `cannot render this entry: ${asText(error?.message ?? error)}`) : null,
    json(m),
  );
}

/** message(), with an error drawing it contained to its own box. @param {Links} [links] */
function safeMessage(m, index, links) {
  try {
    return message(m, index, links);
  } catch (e) {
    console.error(`message #${index + 1} could not be drawn`, e);
    return broken(m, index, e);
  }
}

/**
 * Fills `target` with the messages, the last FIRST_PAGE of them at first and a
 * button that draws FIRST_PAGE earlier ones at a time, scrolled to the last message.
 */
export function renderContext(target, messages) {
  target.replaceChildren();
  target.dataset.count = String(messages.length);
  if (messages.length === 0) {
    target.append(h('p', { class: 'empty' }, 'The context from this entry is empty.'));
    return;
  }
  /** @type {Links} */
  const links = { calls: new Map(), results: new Map(), go };
  messages.forEach((m, i) => {
    if (!isObject(m)) return;
    if (m.role === 'toolResult' && linkId(m.toolCallId)) links.results.set(m.toolCallId, i);
    else if (Array.isArray(m.content)) for (const b of m.content) if (isObject(b) && b.type === 'toolCall' && linkId(b.id)) links.calls.set(b.id, i);
  });
  let start = Math.max(0, messages.length - FIRST_PAGE);
  const list = h('div', { class: 'messages' }, messages.slice(start).map((m, i) => safeMessage(m, start + i, links)));
  const more = h('button', { class: 'more earlier', type: 'button', 'data-testid': 'show-earlier', onclick: () => drawEarlier() });
  const label = () => (more.textContent = `show ${Math.min(FIRST_PAGE, start).toLocaleString()} earlier messages${start > FIRST_PAGE ? ` (${start.toLocaleString()} not drawn)` : ''}`);
  /** Draws the next FIRST_PAGE earlier messages, keeping the ones in view where they are. */
  function drawEarlier() {
    const from = Math.max(0, start - FIRST_PAGE);
    const fromBottom = target.scrollHeight - target.scrollTop;
    list.prepend(...messages.slice(from, start).map((m, i) => safeMessage(m, from + i, links)));
    start = from;
    if (start === 0) more.remove();
    else label();
    target.scrollTop = target.scrollHeight - fromBottom;
  }
  /** Scrolls to the element `selector` (drawing earlier messages if it is among them) and flashes it. */
  function go(selector) {
    let el = list.querySelector(selector);
    while (!el && start > 0) {
      drawEarlier();
      el = list.querySelector(selector);
    }
    if (!el) return;
    for (let d = el.closest('details'); d; d = d.parentElement?.closest('details') ?? null) d.open = true;
    el.scrollIntoView({ block: 'center' });
    el.classList.remove('flash');
    void (/** @type {HTMLElement} */ (el).offsetWidth); // restarts the animation
    el.classList.add('flash');
  }
  if (start > 0) {
    label();
    target.append(more);
  }
  target.append(list);
  // The selected entry is at the end of its context: show the end.
  target.scrollTop = target.scrollHeight;
}
