// Renders a context (pi `AgentMessage`s) as HTML: text, thinking folded in a
// <details>, tool calls with their arguments, tool results (each linked to
// its call), images.

/** Messages drawn at first, and drawn by each "show earlier". */
const FIRST_PAGE = 300;
/** Characters of one text drawn before "show all". */
const LONG_TEXT = 20_000;
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

/** Text in a pre-wrapped block, cut at LONG_TEXT characters with a button for the rest. */
function textBlock(text, cls = 'text') {
  const s = String(text ?? '');
  const div = h('div', { class: cls });
  if (s.length <= LONG_TEXT) {
    div.textContent = s;
    return div;
  }
  div.textContent = s.slice(0, LONG_TEXT);
  div.append(
    h('button', { class: 'more', type: 'button', onclick: () => (div.textContent = s) }, `show all ${s.length.toLocaleString()} characters`),
  );
  return div;
}

function json(v) {
  return textBlock(JSON.stringify(v, null, 2), 'code');
}

/** A link (a button: the URL's hash is the open session) to another message of the context. */
function jump(text, title, selector, links) {
  return h('button', { type: 'button', class: 'link jump', title, 'data-testid': 'jump', onclick: () => links?.go(selector) }, text);
}

const callSel = (id) => `[data-tool-call-id="${CSS.escape(id)}"]`;
const resultSel = (id) => `[data-tool-result-for="${CSS.escape(id)}"]`;

/** A tool result's text: a scrolling monospace box, folded when long. */
function toolOutput(text) {
  const s = String(text ?? '');
  const box = textBlock(s, 'code output');
  const lines = s.split('\n').length;
  if (s.length <= LONG_RESULT && lines <= LONG_RESULT_LINES) return box;
  const first = s.trimStart().split('\n')[0];
  return h(
    'details',
    { class: 'tool-output', 'data-testid': 'tool-output' },
    h('summary', {}, `Output · ${lines.toLocaleString()} ${lines === 1 ? 'line' : 'lines'} · ${s.length.toLocaleString()} characters `, h('code', {}, first.length > 100 ? `${first.slice(0, 100)}…` : first)),
    box,
  );
}

/** One content block. @param {Links} [links] */
function block(b, links) {
  switch (b.type) {
    case 'text':
      return textBlock(b.text);
    case 'thinking':
      return h(
        'details',
        { class: 'thinking', 'data-testid': 'thinking' },
        h('summary', {}, b.redacted ? 'Thinking (redacted)' : `Thinking · ${String(b.thinking ?? '').length.toLocaleString()} characters`),
        textBlock(b.thinking),
      );
    case 'toolCall': {
      const result = b.id ? links?.results.get(b.id) : undefined;
      return h(
        'details',
        { class: 'tool-call', 'data-testid': 'tool-call', 'data-tool-call-id': b.id ?? null, open: true },
        h(
          'summary',
          {},
          h('span', { class: 'badge' }, 'tool call'),
          ' ',
          h('code', {}, b.name),
          h('span', { class: 'muted' }, ` ${b.id ?? ''} `),
          result !== undefined ? jump(`→ result #${result + 1}`, 'Show the result of this call', resultSel(b.id), links) : h('span', { class: 'muted' }, '(no result in this context)'),
        ),
        json(b.arguments ?? {}),
      );
    }
    case 'image':
      return b.data && /^image\/[\w.+-]+$/.test(b.mimeType ?? '')
        ? h('img', { class: 'image', alt: 'image', src: `data:${b.mimeType};base64,${b.data}` })
        : h('div', { class: 'muted' }, `[image${b.mimeType ? ` ${b.mimeType}` : ''}]`);
    default:
      return h('details', { class: 'unknown' }, h('summary', {}, `${b.type} block`), json(b));
  }
}

function content(c, links) {
  if (typeof c === 'string') return [textBlock(c)];
  return (c ?? []).map((b) => block(b, links));
}

/** A tool result's content: text as output boxes, other blocks as usual. */
function resultContent(c) {
  if (typeof c === 'string') return [toolOutput(c)];
  return (c ?? []).map((b) => (b.type === 'text' ? toolOutput(b.text) : block(b)));
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

/** One message as an <article data-testid="context-message" data-role=…>. @param {Links} [links] */
export function message(m, index, links) {
  const head = h('header', {}, h('span', { class: 'role' }, ROLE_NAMES[m.role] ?? m.role), h('span', { class: 'index' }, `#${index + 1}`));
  let body;
  switch (m.role) {
    case 'assistant':
      if (m.model) head.append(h('span', { class: 'muted' }, `${m.provider ?? ''} · ${m.model}`));
      if (m.stopReason && m.stopReason !== 'stop' && m.stopReason !== 'toolUse') head.append(h('span', { class: 'badge warn' }, m.stopReason));
      body = content(m.content, links);
      if (m.errorMessage) body.push(h('div', { class: 'error-text' }, m.errorMessage));
      break;
    case 'toolResult': {
      const call = m.toolCallId ? links?.calls.get(m.toolCallId) : undefined;
      head.append(
        h('span', { class: 'muted' }, 'of'),
        h('code', {}, m.toolName ?? ''),
        call !== undefined ? jump(`↩ call in #${call + 1}`, `Show the call (${m.toolCallId})`, callSel(m.toolCallId), links) : h('span', { class: 'muted' }, m.toolCallId ?? ''),
      );
      if (m.isError) head.append(h('span', { class: 'badge warn' }, 'error'));
      body = resultContent(m.content);
      break;
    }
    case 'bashExecution':
      head.append(h('span', { class: m.exitCode === 0 ? 'muted' : 'badge warn' }, `exit ${m.exitCode ?? '?'}`));
      body = [textBlock(`$ ${m.command}`, 'code'), m.output ? textBlock(m.output, 'code') : h('div', { class: 'muted' }, '(no output)')];
      break;
    case 'custom':
      head.append(h('code', {}, m.customType ?? ''));
      body = content(m.content);
      break;
    case 'branchSummary':
    case 'compactionSummary':
      if (m.tokensBefore) head.append(h('span', { class: 'muted' }, `${m.tokensBefore.toLocaleString()} tokens before`));
      body = [textBlock(m.summary)];
      break;
    default:
      body = content(m.content);
  }
  if (m.timestamp) head.append(h('time', { class: 'muted', datetime: new Date(m.timestamp).toISOString() }, new Date(m.timestamp).toLocaleString()));
  return h(
    'article',
    { class: `msg role-${m.role}${m.isError ? ' is-error' : ''}`, 'data-testid': 'context-message', 'data-role': m.role, 'data-tool-result-for': m.role === 'toolResult' ? m.toolCallId ?? null : null },
    head,
    ...body,
  );
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
    if (m.role === 'toolResult' && m.toolCallId) links.results.set(m.toolCallId, i);
    else if (Array.isArray(m.content)) for (const b of m.content) if (b.type === 'toolCall' && b.id) links.calls.set(b.id, i);
  });
  let start = Math.max(0, messages.length - FIRST_PAGE);
  const list = h('div', { class: 'messages' }, messages.slice(start).map((m, i) => message(m, start + i, links)));
  const more = h('button', { class: 'more earlier', type: 'button', 'data-testid': 'show-earlier', onclick: () => drawEarlier() });
  const label = () => (more.textContent = `show ${Math.min(FIRST_PAGE, start).toLocaleString()} earlier messages${start > FIRST_PAGE ? ` (${start.toLocaleString()} not drawn)` : ''}`);
  /** Draws the next FIRST_PAGE earlier messages, keeping the ones in view where they are. */
  function drawEarlier() {
    const from = Math.max(0, start - FIRST_PAGE);
    const fromBottom = target.scrollHeight - target.scrollTop;
    list.prepend(...messages.slice(from, start).map((m, i) => message(m, from + i, links)));
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
