// Renders a context (pi `AgentMessage`s) as HTML: text, thinking folded in a
// <details>, tool calls with their arguments, tool results, images.

/** Messages drawn at first; older ones come with "show earlier". */
const FIRST_PAGE = 300;
/** Characters of one text drawn before "show all". */
const LONG_TEXT = 20_000;

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

/** One content block. */
function block(b) {
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
    case 'toolCall':
      return h(
        'details',
        { class: 'tool-call', 'data-testid': 'tool-call', open: true },
        h('summary', {}, h('span', { class: 'badge' }, 'tool call'), ' ', h('code', {}, b.name), h('span', { class: 'muted' }, ` ${b.id ?? ''}`)),
        json(b.arguments ?? {}),
      );
    case 'image':
      return b.data && /^image\/[\w.+-]+$/.test(b.mimeType ?? '')
        ? h('img', { class: 'image', alt: 'image', src: `data:${b.mimeType};base64,${b.data}` })
        : h('div', { class: 'muted' }, `[image${b.mimeType ? ` ${b.mimeType}` : ''}]`);
    default:
      return h('details', { class: 'unknown' }, h('summary', {}, `${b.type} block`), json(b));
  }
}

function content(c) {
  if (typeof c === 'string') return [textBlock(c)];
  return (c ?? []).map(block);
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

/** One message as an <article data-testid="context-message" data-role=…>. */
export function message(m, index) {
  const head = h('header', {}, h('span', { class: 'role' }, ROLE_NAMES[m.role] ?? m.role), h('span', { class: 'index' }, `#${index + 1}`));
  let body;
  switch (m.role) {
    case 'assistant':
      if (m.model) head.append(h('span', { class: 'muted' }, `${m.provider ?? ''} · ${m.model}`));
      if (m.stopReason && m.stopReason !== 'stop' && m.stopReason !== 'toolUse') head.append(h('span', { class: 'badge warn' }, m.stopReason));
      body = content(m.content);
      if (m.errorMessage) body.push(h('div', { class: 'error-text' }, m.errorMessage));
      break;
    case 'toolResult':
      head.append(h('code', {}, m.toolName ?? ''), h('span', { class: 'muted' }, m.toolCallId ?? ''));
      if (m.isError) head.append(h('span', { class: 'badge warn' }, 'error'));
      body = content(m.content);
      break;
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
  return h('article', { class: `msg role-${m.role}${m.isError ? ' is-error' : ''}`, 'data-testid': 'context-message', 'data-role': m.role }, head, ...body);
}

/**
 * Fills `target` with the messages, the last FIRST_PAGE of them at first and a
 * button that draws the earlier ones, scrolled to the last message.
 */
export function renderContext(target, messages) {
  target.replaceChildren();
  target.dataset.count = String(messages.length);
  if (messages.length === 0) {
    target.append(h('p', { class: 'empty' }, 'The context from this entry is empty.'));
    return;
  }
  const start = Math.max(0, messages.length - FIRST_PAGE);
  const list = h('div', { class: 'messages' }, messages.slice(start).map((m, i) => message(m, start + i)));
  if (start > 0) {
    const more = h(
      'button',
      {
        class: 'more earlier',
        type: 'button',
        'data-testid': 'show-earlier',
        onclick: () => {
          more.remove();
          list.prepend(...messages.slice(0, start).map((m, i) => message(m, i)));
        },
      },
      `show ${start.toLocaleString()} earlier messages`,
    );
    target.append(more);
  }
  target.append(list);
  // The selected entry is at the end of its context: show the end.
  target.scrollTop = target.scrollHeight;
}
