// The session explorer: sessions imported into IndexedDB (left), the branch
// tree of the open session (middle), the context from the selected entry and
// its provider request (right). Everything runs in the page with the web
// build of forkpoint; nothing is sent anywhere.
//
// `?db=NAME` picks the IndexedDB database (default `forkpoint-explorer`);
// the URL's hash remembers the open session across reloads.
import { PAGE, appendPages, asText, fill, h, renderContext } from './messages.js';
import { TreeModel, TreeView } from './tree.js';

const DB = new URLSearchParams(location.search).get('db') || 'forkpoint-explorer';
const TARGETS = /** @type {const} */ (['anthropic', 'openai', 'openai-responses', 'google']);
/** Characters of a request body drawn at a time, at most ("show more" draws the next part; Copy always copies all of it). */
const BODY_CHUNK = 200_000;
/** Bodies up to this many characters are shown indented; longer ones as they are. */
const PRETTY_MAX = 2_000_000;
/** Report steps listed one by one (they are also counted by code). */
const STEPS_SHOWN = 500;

/** @param {string} id */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const ui = {
  input: /** @type {HTMLInputElement} */ (byId('file-input')),
  drop: byId('drop-zone'),
  progress: /** @type {HTMLProgressElement} */ (byId('import-progress')),
  cancel: byId('import-cancel'),
  list: byId('session-list'),
  count: byId('session-count'),
  error: byId('error'),
  status: byId('status'),
  title: byId('session-title'),
  summary: byId('tree-summary'),
  tree: byId('tree'),
  exportLink: /** @type {HTMLAnchorElement} */ (byId('export-link')),
  exportPi: /** @type {HTMLAnchorElement} */ (byId('export-pi-link')),
  nodeInfo: byId('node-info'),
  cont: /** @type {HTMLButtonElement} */ (byId('continue')),
  fork: /** @type {HTMLButtonElement} */ (byId('fork')),
  context: byId('context'),
  provider: byId('provider'),
  target: /** @type {HTMLSelectElement} */ (byId('provider-select')),
  copy: /** @type {HTMLButtonElement} */ (byId('copy-body')),
  report: byId('provider-report'),
  body: byId('provider-body'),
  bodyMore: /** @type {HTMLButtonElement} */ (byId('body-more')),
};

/** @type {import('../dist/web.js').IndexedDbStore} */
let store;
/** @type {typeof import('../dist/web.js')} */
let lib;

const state = {
  /** @type {import('../dist/web.js').StoredSessionInfo[]} */
  sessions: [],
  /** @type {string | null} open session id */
  id: null,
  /** @type {import('../dist/web.js').Session | null} */
  session: null,
  /** @type {string | null} selected entry */
  selected: null,
  /** @type {string} the request body shown (what Copy copies) */
  body: '',
  /** @type {string} the body as drawn (indented), drawn BODY_CHUNK characters at a time */
  shown: '',
  /** Characters of `shown` drawn so far. */
  drawn: 0,
  tab: 'context',
  /** Operations under way (the page's `data-busy`). */
  busy: 0,
};

const tree = new TreeView(ui.tree, { onSelect: (id) => showEntry(id) });

// ---------------------------------------------------------------- messages

/** A sentence for a forkpoint error code, for people. */
function explain(e) {
  switch (e?.code) {
    case 'CORRUPTED_DATA':
      return `The file is damaged${e.line ? ` at line ${e.line}` : ''}${e.offset != null ? ` (byte ${e.offset})` : ''}. Nothing was imported.`;
    case 'UNSUPPORTED_FORMAT':
      return 'This is not a session file the explorer can read: it takes pi, Claude Code and Codex sessions (.jsonl or .jsonl.gz).';
    case 'STORAGE_FULL':
      return "The browser's storage for this page is full. Delete sessions you no longer need, then try again.";
    case 'ALREADY_EXISTS':
      return 'This session is already in the list (imported before): open it, or import it again as a copy under a new id.';
    case 'INVALID_ID':
      return 'The session id is not valid.';
    case 'ABORTED':
      return 'The import was cancelled; nothing of it was stored.';
    case 'BLOCKED':
      return 'Another tab holds an older version of this database open. Close it and reload.';
    case 'NOT_FOUND':
      return 'It is not in the store any more (deleted in another tab?).';
    case 'LIMIT_EXCEEDED':
      return `The file goes beyond a limit of the reader (a line too long or nested too deeply${e.line ? `, at line ${e.line}` : ''}). Nothing was imported.`;
    default:
      return '';
  }
}

const codeOf = (e) => e?.code ?? (e?.name === 'AbortError' ? 'ABORTED' : 'ERROR');

/**
 * Shows an error in the banner; the list and the open session stay as they
 * are. `actions` are buttons offered with it ({label, testid, run}).
 */
function showError(title, e, actions = []) {
  console.error(e);
  const code = codeOf(e);
  fillBanner(title, code, explain(e), `${code}: ${e?.message ?? String(e)}`, [], actions);
}

/** The one banner for a batch of imports: how many went in, and why each failure failed. */
function showImportFailures(imported, failures, actions = []) {
  for (const f of failures) console.error(f.name, f.error);
  const codes = new Set(failures.map((f) => codeOf(f.error)));
  fillBanner(
    `${imported.toLocaleString()} imported, ${failures.length.toLocaleString()} failed`,
    codes.size === 1 ? [...codes][0] : 'SEVERAL',
    '',
    '',
    failures.map((f) =>
      h('li', { 'data-code': codeOf(f.error) }, h('strong', {}, f.name), ' — ', explain(f.error) || f.error?.message || String(f.error), ' ', h('span', { class: 'error-detail' }, `${codeOf(f.error)}: ${f.error?.message ?? f.error}`)),
    ),
    actions,
  );
}

function fillBanner(title, code, explanation, detail, items, actions) {
  ui.error.dataset.code = code;
  ui.error.querySelector('.error-title').textContent = title;
  ui.error.querySelector('.error-explain').textContent = explanation;
  ui.error.querySelector('.error-detail').textContent = detail;
  const list = /** @type {HTMLElement} */ (ui.error.querySelector('.error-list'));
  fill(list, items);
  list.hidden = items.length === 0;
  const bar = /** @type {HTMLElement} */ (ui.error.querySelector('.error-actions'));
  fill(bar, actions.map((a) => h('button', { type: 'button', 'data-testid': a.testid, onclick: () => (clearError(), a.run()) }, a.label)));
  bar.hidden = actions.length === 0;
  ui.error.hidden = false;
}

function clearError() {
  ui.error.hidden = true;
  delete ui.error.dataset.code;
}

function status(text) {
  ui.status.textContent = text;
}

/** Runs `fn` as one operation: counted in `data-busy`, errors shown in the banner. */
async function task(errorTitle, fn) {
  state.busy++;
  document.body.dataset.busy = 'true';
  try {
    return await fn();
  } catch (e) {
    if (e?.code === 'ABORTED') {
      status('Cancelled; nothing was stored.');
      return;
    }
    showError(errorTitle, e);
    status(`${errorTitle}.`);
  } finally {
    if (--state.busy === 0) delete document.body.dataset.busy;
  }
}

// ---------------------------------------------------------------- helpers

const fmtBytes = (n) =>
  n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KB` : `${(n / (1 << 20)).toFixed(1)} MB`;

/** "1 leaf", "3 leaves". */
const count = (n, one, many = `${one}s`) => `${n.toLocaleString()} ${n === 1 ? one : many}`;

/** A stored date for people; a value that is no date is shown as it is. */
const fmtDate = (iso) => {
  const d = typeof iso === 'string' || typeof iso === 'number' ? new Date(iso) : null;
  return d && !Number.isNaN(d.getTime()) ? d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : asText(iso);
};
const fmtShortDate = (iso) => (iso ? new Date(iso).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }) : '');

/** @param {import('../dist/web.js').StoredSessionInfo} s */
const displayName = (s) => s.name || s.source || s.id;

/** Copies text, with the old execCommand way where the clipboard API is refused. */
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const ta = h('textarea', { readonly: true, class: 'offscreen' });
    ta.value = text;
    document.body.append(ta);
    ta.select();
    const ok = document.execCommand('copy');
    ta.remove();
    return ok;
  }
}

// ---------------------------------------------------------------- session list

async function refreshList() {
  state.sessions = await store.listSessions();
  ui.count.textContent = state.sessions.length ? String(state.sessions.length) : '';
  ui.list.replaceChildren(
    ...state.sessions.map((s) => {
      const del = h(
        'button',
        { type: 'button', class: 'delete', 'data-testid': 'delete-session', title: `Delete ${displayName(s)}`, 'aria-label': `Delete ${displayName(s)}` },
        'Delete',
      );
      // Two clicks: the first arms the button (for 4 s, or until Escape), the second deletes.
      del.addEventListener('click', () => {
        if (del.dataset.armed !== 'true') {
          del.dataset.armed = 'true';
          del.textContent = 'Delete?';
          setTimeout(() => disarm(del), 4000);
          return;
        }
        void deleteSession(s.id);
      });
      if (s.error) {
        // A record the store cannot read: say so, and let it be deleted.
        return h(
          'li',
          { class: 'damaged', 'data-testid': 'session-item', 'data-session-id': s.id, 'data-error': s.error.code },
          h('span', { class: 'open' }, h('span', { class: 'name' }, s.id), h('span', { class: 'meta' }, `${s.error.code}: ${s.error.message}`)),
          del,
        );
      }
      const meta = [s.format, `${s.messageCount.toLocaleString()} msgs`, fmtBytes(s.bytes)];
      return h(
        'li',
        { class: s.id === state.id ? 'active' : '', 'data-testid': 'session-item', 'data-session-id': s.id },
        h(
          'button',
          { type: 'button', class: 'open', 'data-testid': 'open-session', 'aria-current': s.id === state.id ? 'true' : null, onclick: () => task(`Could not open ${displayName(s)}`, () => (status(''), open(s.id))) },
          h('span', { class: 'name' }, displayName(s)),
          h('span', { class: 'meta' }, meta.join(' · ')),
          h('span', { class: 'meta', title: `imported ${fmtDate(s.importedAt)}` }, s.parentSession ? `fork · ${fmtShortDate(s.importedAt)}` : `imported ${fmtShortDate(s.importedAt)}`),
        ),
        del,
      );
    }),
  );
  if (!state.sessions.length) ui.list.append(h('li', { class: 'empty' }, 'No sessions yet. Drop a session file above.'));
}

/** @param {HTMLElement} del a Delete button */
function disarm(del) {
  if (del.dataset.armed !== 'true') return;
  del.dataset.armed = 'false';
  del.textContent = 'Delete';
}

async function deleteSession(id) {
  await task('Could not delete the session', async () => {
    await store.deleteSession(id);
    announce('delete', id);
    if (state.id === id) closeSession();
    await refreshList();
    status('Session deleted.');
  });
}

// ---------------------------------------------------------------- other tabs

// Tabs open on the same database tell each other about their changes: the
// others list the sessions again and re-open the one they show.
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(`forkpoint-explorer:${DB}`) : null;

/** Tells the other tabs that session `id` changed (`op`: import, delete, move-leaf, fork). */
function announce(op, id) {
  channel?.postMessage({ op, id });
}

if (channel) {
  channel.onmessage = (e) =>
    void task('Could not follow a change made in another tab', async () => {
      const { op, id } = e.data ?? {};
      await refreshList();
      const open_ = state.id;
      if (!open_) return;
      if (!state.sessions.some((s) => s.id === open_)) {
        closeSession();
        ui.context.replaceChildren(h('p', { class: 'empty', 'data-testid': 'deleted-elsewhere' }, 'The session that was open here was deleted in another tab.'));
        status('The open session was deleted in another tab.');
      } else if (id === open_ && op !== 'fork') {
        await open(open_, state.selected ?? undefined);
        status('The open session changed in another tab; it was re-opened.');
      }
    });
}

// ---------------------------------------------------------------- import

/** A new session id (for "import as a copy"). */
const newId = () =>
  typeof crypto.randomUUID === 'function'
    ? crypto.randomUUID()
    : [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');

/**
 * Imports files one after the other. A failure does not stop the rest; at the
 * end one banner says what failed and why (Cancel stops the batch). `opts.copy`
 * stores each under a new id (a session already in the list imported again);
 * `opts.openExisting` opens a single file's session when it was imported before.
 */
async function importFiles(files, opts = {}) {
  if (!files.length) return;
  const ctl = new AbortController();
  ui.cancel.onclick = () => ctl.abort();
  /** @type {{ name: string, file: File, error: any }[]} */
  const failures = [];
  /** @type {import('../dist/web.js').StoredSessionInfo | null} */
  let last = null;
  let imported = 0;
  let cancelled = false;
  await task('Could not import', async () => {
    clearError();
    try {
      for (const file of files) {
        if (cancelled) break;
        ui.progress.hidden = false;
        ui.progress.value = 0;
        ui.cancel.hidden = false;
        status(`Importing ${file.name}…`);
        try {
          const existing = opts.copy ? state.sessions.find((s) => s.id === opts.copy) : null;
          last = await store.importSession(file, {
            signal: ctl.signal,
            ...(opts.copy ? { id: newId(), name: `${existing ? displayName(existing) : file.name} (copy)` } : {}),
            onProgress: (p) => {
              ui.progress.value = p.total ? p.bytes / p.total : 0;
              status(`Importing ${file.name}: ${p.phase === 'read' ? 'reading' : 'storing'} ${fmtBytes(p.bytes)} of ${fmtBytes(p.total)}`);
            },
          });
          imported++;
          await refreshList();
        } catch (e) {
          if (codeOf(e) === 'ABORTED') cancelled = true;
          else failures.push({ name: file.name, file, error: e });
        }
      }
    } finally {
      ui.progress.hidden = true;
      ui.cancel.hidden = true;
      if (imported) announce('import', last?.id);
      if (last) await open(last.id);
    }
    const one = failures.length === 1 ? failures[0] : null;
    if (opts.openExisting && files.length === 1 && one && codeOf(one.error) === 'ALREADY_EXISTS') {
      const id = await storedId(one.file).catch(() => null);
      if (id && state.sessions.some((s) => s.id === id)) {
        await open(id);
        status(`${one.name} was imported before: opened it.`);
        return;
      }
    }
    // A session imported before: offer to open it, or to import it again as a copy.
    const actions = one && codeOf(one.error) === 'ALREADY_EXISTS' ? await alreadyExistsActions(one.file) : [];
    if (files.length === 1 && one) {
      showError(`Could not import ${one.name}`, one.error, actions);
      status(`Could not import ${one.name}.`);
    } else if (failures.length) {
      showImportFailures(imported, failures, actions);
      status(`Imported ${imported} of ${files.length} files.`);
    } else if (cancelled) {
      status(imported ? `Cancelled after ${imported} of ${files.length} files; the file under way was not stored.` : 'Cancelled; nothing was stored.');
    } else if (files.length === 1 && last) {
      status(`Imported ${files[0].name}: ${last.entryCount.toLocaleString()} entries.`);
    } else {
      status(`Imported ${imported} files.`);
    }
  });
}

/** Imports the file at `url` (same origin), or opens it when it is already in the list. */
async function importFromUrl(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`Could not fetch ${url}: HTTP ${res.status}`);
  const file = new File([await res.blob()], decodeURIComponent(url.split('/').pop() || 'session.jsonl'));
  await importFiles([file], { openExisting: true });
}

/** The banner's buttons for `file`, which is already in the list. */
async function alreadyExistsActions(file) {
  const id = await storedId(file).catch(() => null);
  const actions = [];
  if (id && state.sessions.some((s) => s.id === id)) {
    actions.push({ label: 'Open it', testid: 'open-existing', run: () => task('Could not open the session', () => open(id)) });
  }
  actions.push({ label: 'Import as a copy', testid: 'import-copy', run: () => importFiles([file], { copy: id ?? true }) });
  return actions;
}

/**
 * The id `file` is stored under when imported without one: a pi file's own id,
 * else the id the library derives from the source (a Claude Code or Codex
 * session's own id), or null.
 */
async function storedId(file) {
  return (await headerId(file)) ?? (await lib.importSession(file)).summary.sessionId ?? null;
}

/** The id in a pi file's header line (gzip or not), or null. */
async function headerId(file) {
  const magic = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  /** @type {ReadableStream<Uint8Array>} */
  let bytes = file.stream();
  if (magic[0] === 0x1f && magic[1] === 0x8b) bytes = bytes.pipeThrough(new DecompressionStream('gzip'));
  const reader = bytes.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  try {
    while (!text.includes('\n') && text.length < 1 << 20) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
  } finally {
    void reader.cancel().catch(() => {});
  }
  try {
    const header = JSON.parse(text.split('\n')[0].replace(/^\uFEFF/, ''));
    return header?.type === 'session' && typeof header.id === 'string' ? header.id : null;
  } catch {
    return null;
  }
}

ui.input.addEventListener('change', async () => {
  const files = [...(ui.input.files ?? [])];
  ui.input.value = '';
  await importFiles(files);
});

// Files can be dropped anywhere on the page.
let dragDepth = 0;
document.addEventListener('dragenter', (e) => {
  if (!e.dataTransfer?.types.includes('Files')) return;
  dragDepth++;
  ui.drop.classList.add('dragging');
});
document.addEventListener('dragleave', () => {
  if (--dragDepth <= 0) ui.drop.classList.remove('dragging');
});
document.addEventListener('dragover', (e) => e.preventDefault());
document.addEventListener('drop', (e) => {
  e.preventDefault();
  dragDepth = 0;
  ui.drop.classList.remove('dragging');
  const files = [...(e.dataTransfer?.files ?? [])];
  if (files.length) void importFiles(files);
});

// ---------------------------------------------------------------- open session

function closeSession() {
  const prev = state.session;
  state.id = null;
  state.session = null;
  state.selected = null;
  tree.clear();
  prev?.free(); // nothing holds it any more (the tree's model went with clear())
  ui.title.textContent = 'No session open';
  ui.summary.replaceChildren();
  ui.nodeInfo.replaceChildren();
  ui.context.replaceChildren(h('p', { class: 'empty' }, 'Open a session, then pick an entry in the tree.'));
  ui.body.textContent = '';
  ui.bodyMore.hidden = true;
  state.body = state.shown = '';
  state.drawn = 0;
  ui.report.replaceChildren();
  setExportTarget(null);
  document.body.classList.remove('has-session');
  history.replaceState(null, '', location.pathname + location.search);
}

/**
 * Opens session `id` (loaded whole: the tree needs every entry) and selects
 * `selectId`, or the current leaf. Runs the user expanded stay expanded.
 */
async function open(id, selectId) {
  const session = await store.loadSession(id);
  const info = state.sessions.find((s) => s.id === id);
  const expanded = state.id === id && tree.model ? [...tree.model.expanded.keys()].map((i) => tree.model.runs[i].firstId) : [];
  const scroll = state.id === id ? ui.tree.scrollTop : null;
  let model;
  try {
    model = new TreeModel(session);
  } catch (e) {
    session.free();
    throw e;
  }
  // The session shown before is freed once nothing can reach it: the tree
  // takes the new model, and work waiting for a frame checks state.session.
  const prev = state.session;
  state.id = id;
  state.session = session;
  model.runs.forEach((run, i) => {
    if (expanded.includes(run.firstId) && !model.expanded.has(i)) model.toggle(i);
  });
  if (selectId) {
    try {
      session.getEntry(selectId);
    } catch {
      selectId = undefined; // gone (changed in another tab)
    }
  }
  const select = selectId ?? session.leafId ?? model.rows[model.rows.length - 1]?.id ?? null;
  tree.setModel(model, select);
  if (prev && prev !== session) prev.free();
  if (scroll !== null) ui.tree.scrollTop = scroll;

  ui.title.textContent = info ? displayName(info) : id;
  const meta = session.getMetadata();
  const facts = [
    h('span', {}, count(meta.entryCount, 'entry', 'entries')),
    h('span', {}, count(meta.messageCount, 'message')),
    h('span', {}, count(model.runs.length, 'run')),
    h('span', { 'data-testid': 'leaf-count' }, count(model.leaves, 'leaf', 'leaves')),
    h('span', { 'data-testid': 'branch-point-count' }, count(model.branchPoints, 'branch point')),
    model.hookBranchPoints
      ? h(
          'span',
          { class: 'note', 'data-testid': 'hook-branch-points', title: 'Side branches made only of custom entries (Claude Code progress and hook records) are drawn faded' },
          `${model.hookBranchPoints.toLocaleString()} of them hook/progress side entries`,
        )
      : null,
    meta.compactions ? h('span', {}, count(meta.compactions, 'compaction')) : null,
    info ? h('span', {}, info.format) : null,
  ];
  fill(ui.summary, facts);
  ui.summary.dataset.leaves = String(model.leaves);
  ui.summary.dataset.branchPoints = String(model.branchPoints);
  setExportTarget(info ?? null);
  document.body.classList.add('has-session');
  history.replaceState(null, '', `#${encodeURIComponent(id)}`);
  for (const li of ui.list.querySelectorAll('[data-session-id]')) {
    const on = li.getAttribute('data-session-id') === id;
    li.classList.toggle('active', on);
    if (on) li.querySelector('.open')?.setAttribute('aria-current', 'true');
    else li.querySelector('.open')?.removeAttribute('aria-current');
  }
  if (select) showEntry(select);
}

// ---------------------------------------------------------------- selected entry

/** Shows the context from entry `id`, and its provider request if that tab is open. */
function showEntry(id) {
  const session = state.session;
  if (!session) return;
  state.selected = id;
  /** @type {any} */ let entry;
  try {
    entry = session.getEntry(id);
  } catch (e) {
    showError('Could not read the entry', e);
    return;
  }
  const isLeaf = id === session.leafId;
  const kind = asText(entry?.type === 'message' ? entry.message?.role ?? 'message' : entry?.type).slice(0, 40) || 'entry';
  const label = tree.model?.branch.getLabel(id);
  fill(
    ui.nodeInfo,
    h('strong', {}, kind),
    h('code', { title: `entry id ${id}` }, id.length > 13 ? `${id.slice(0, 12)}…` : id),
    entry.timestamp ? h('span', { class: 'muted' }, fmtDate(entry.timestamp)) : null,
    isLeaf ? h('span', { class: 'badge current' }, 'current leaf') : null,
    label ? h('span', { class: 'badge label', 'data-testid': 'entry-label', title: `label: ${label}` }, `⚑ ${label}`) : null,
  );
  ui.nodeInfo.dataset.entryId = id;
  ui.cont.disabled = isLeaf;
  ui.fork.disabled = false;
  let messages;
  try {
    messages = session.getContext(id);
  } catch (e) {
    showError('Could not build the context', e);
  }
  if (messages) {
    try {
      renderContext(ui.context, messages);
    } catch (e) {
      // Each message's drawing is contained (renderContext); this is a last guard, kept to the panel.
      console.error(e);
      fill(ui.context, h('p', { class: 'error-text', 'data-testid': 'render-error' }, `cannot render this context: ${e?.message ?? e}`));
    }
    ui.context.dataset.entryId = id;
  }
  if (state.tab === 'provider') void showProvider();
  else ui.body.dataset.stale = 'true';
}

ui.cont.addEventListener('click', () =>
  task('Could not move the current leaf', async () => {
    const id = state.id;
    const entry = state.selected;
    if (!id || !entry) return;
    await store.moveLeaf(id, entry);
    announce('move-leaf', id);
    await refreshList();
    await open(id, entry);
    status(`The conversation continues from ${entry}.`);
  }),
);

ui.fork.addEventListener('click', () =>
  task('Could not fork the session', async () => {
    const id = state.id;
    const entry = state.selected;
    if (!id || !entry) return;
    const info = await store.fork(id, entry);
    announce('fork', info.id);
    await refreshList();
    await open(info.id);
    status(`Forked into a new session from ${entry}.`);
  }),
);

// ---------------------------------------------------------------- provider tab

for (const t of TARGETS) ui.target.append(h('option', { value: t }, t));

/** Resolves after the page painted (so "building…" shows before a long task). */
const afterPaint = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

/** Counts the builds under way; a newer one makes an older one stop. */
let providerBuild = 0;

/**
 * Builds the provider request for the selected entry. A large session takes a
 * while (a long task the page cannot avoid), so "building…" is painted first.
 */
async function showProvider() {
  const session = state.session;
  const entryId = state.selected;
  const target = /** @type {import('../dist/web.js').ProviderName} */ (ui.target.value);
  if (!session || !entryId) return;
  const build = ++providerBuild;
  delete ui.body.dataset.target;
  delete ui.body.dataset.entryId;
  ui.body.dataset.building = 'true';
  ui.body.textContent = '';
  ui.bodyMore.hidden = true;
  state.body = state.shown = '';
  state.drawn = 0;
  fill(ui.report, h('p', { class: 'muted building', 'data-testid': 'provider-building' }, `Building the ${target} request…`));
  state.busy++;
  document.body.dataset.busy = 'true';
  try {
    await afterPaint();
    // Another entry, target or session was picked meanwhile (the session may be freed).
    if (build !== providerBuild || state.session !== session) return;
    let conv;
    try {
      conv = session.toProvider(target, { leafId: entryId });
    } catch (e) {
      fill(ui.report);
      showError(`Could not build the ${target} request`, e);
      return;
    }
    state.body = conv.body;
    let shown = conv.body;
    if (shown.length <= PRETTY_MAX) shown = JSON.stringify(JSON.parse(shown), null, 2);
    state.shown = shown;
    ui.body.replaceChildren();
    state.drawn = appendPages(ui.body, shown, 0, BODY_CHUNK / PAGE, 'span');
    showBodyMore();
    ui.body.dataset.truncated = String(state.drawn < shown.length);
    ui.body.dataset.target = target;
    ui.body.dataset.entryId = entryId;
    delete ui.body.dataset.stale;
    renderReport(conv.report, conv.body.length, state.drawn < shown.length);
  } finally {
    if (build === providerBuild) delete ui.body.dataset.building;
    if (--state.busy === 0) delete document.body.dataset.busy;
  }
}

/** The "show more" button under a body drawn in part. */
function showBodyMore() {
  const left = state.shown.length - state.drawn;
  ui.bodyMore.hidden = left <= 0;
  ui.bodyMore.textContent = `${left <= BODY_CHUNK ? 'show the rest' : `show up to ${BODY_CHUNK.toLocaleString()} more characters`} (${left.toLocaleString()} not drawn; Copy copies all)`;
}

ui.bodyMore.addEventListener('click', () => {
  state.drawn = appendPages(ui.body, state.shown, state.drawn, BODY_CHUNK / PAGE, 'span');
  ui.body.dataset.truncated = String(state.drawn < state.shown.length);
  showBodyMore();
});

/** @param {import('../dist/web.js').CompatibilityReport} report */
function renderReport(report, bodyChars, truncated) {
  ui.report.dataset.compatible = String(report.compatible);
  ui.report.dataset.steps = String(report.steps.length);
  const counts = new Map();
  for (const s of report.steps) counts.set(s.code, (counts.get(s.code) ?? 0) + 1);
  fill(
    ui.report,
    h(
      'p',
      { class: `verdict ${report.compatible ? 'ok' : 'lossy'}` },
      report.compatible ? '✓ Compatible: nothing is lost' : `⚠ Lossy: ${report.lossyFields.length} field${report.lossyFields.length === 1 ? '' : 's'} changed or dropped`,
      h('span', { class: 'muted' }, ` · ${fmtBytes(bodyChars)} body${truncated ? ' (drawn in part; Copy copies all)' : ''}`),
    ),
    report.warnings.length
      ? h('ul', { class: 'warnings', 'data-testid': 'report-warnings' }, report.warnings.map((w) => h('li', {}, w)))
      : null,
    report.lossyFields.length
      ? h('p', { class: 'lossy-fields' }, 'Lossy fields: ', report.lossyFields.map((f, i) => [i ? ', ' : '', h('code', {}, f)]))
      : null,
    report.steps.length
      ? h(
          'details',
          { class: 'steps' },
          h('summary', {}, `${report.steps.length} step${report.steps.length === 1 ? '' : 's'}: `, [...counts].map(([c, n], i) => [i ? ', ' : '', h('code', {}, c), n > 1 ? ` ×${n}` : ''])),
          h(
            'table',
            {},
            h('thead', {}, h('tr', {}, h('th', {}, 'code'), h('th', {}, 'msg'), h('th', {}, 'what happened'))),
            h(
              'tbody',
              {},
              report.steps.slice(0, STEPS_SHOWN).map((s) =>
                h('tr', { 'data-testid': 'report-step', 'data-code': s.code, class: s.lossy ? 'lossy' : '' }, h('td', {}, h('code', {}, s.code)), h('td', {}, s.message ?? ''), h('td', {}, s.detail)),
              ),
            ),
          ),
          report.steps.length > STEPS_SHOWN ? h('p', { class: 'muted' }, `and ${report.steps.length - STEPS_SHOWN} more`) : null,
        )
      : h('p', { class: 'muted' }, 'No conversion steps.'),
  );
}

ui.target.addEventListener('change', () => void showProvider());

ui.copy.addEventListener('click', async () => {
  const ok = await copyText(state.body);
  ui.copy.textContent = ok ? 'Copied' : 'Copy failed';
  ui.copy.dataset.copied = String(ok);
  setTimeout(() => (ui.copy.textContent = 'Copy'), 1500);
});

// Tabs: Messages | Provider request. Arrow keys, Home and End move between
// them (the selected tab is the one Tab stops at).
const tabs = /** @type {HTMLElement[]} */ ([...document.querySelectorAll('[role="tab"]')]);
for (const tab of tabs) {
  tab.addEventListener('click', () => selectTab(tab.dataset.tab ?? 'context'));
  tab.addEventListener('keydown', (e) => {
    const i = tabs.indexOf(tab);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1 + tabs.length, Home: 0, End: tabs.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const next = tabs[to % tabs.length];
    next.focus();
    selectTab(next.dataset.tab ?? 'context');
  });
}
function selectTab(name) {
  state.tab = name;
  for (const tab of tabs) {
    const on = tab.dataset.tab === name;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
  }
  ui.context.hidden = name !== 'context';
  ui.provider.hidden = name !== 'provider';
  if (name === 'provider' && (ui.body.dataset.stale === 'true' || ui.body.dataset.entryId !== state.selected)) void showProvider();
}

// ---------------------------------------------------------------- export

/** Points the export links at session `info` (the file is made when clicked). */
function setExportTarget(info) {
  for (const [a, format] of /** @type {const} */ ([[ui.exportLink, 'original'], [ui.exportPi, 'pi']])) {
    if (a.href.startsWith('blob:')) URL.revokeObjectURL(a.href);
    a.removeAttribute('href');
    delete a.dataset.ready;
    if (!info) continue;
    const base = (info.source || info.id).replace(/\.jsonl(\.gz)?$/i, '').replace(/[^\w.-]+/g, '_');
    // The store gives the imported bytes back while the session is unchanged, else its pi JSONL.
    const original = format === 'original' && !info.changed;
    a.download = format === 'pi' ? `${base}.pi.jsonl` : `${base}.jsonl${original && info.gzip ? '.gz' : ''}`;
    if (format === 'original') {
      a.title = original ? 'The file as imported, byte for byte' : 'The session as pi JSONL (it changed since the import)';
    }
    a.href = '#';
  }
}

for (const [a, format] of /** @type {const} */ ([[ui.exportLink, 'original'], [ui.exportPi, 'pi']])) {
  a.addEventListener('click', async (e) => {
    if (a.dataset.ready === 'true') {
      // The file was made: let the browser download it, then make it again next time (the session may change).
      setTimeout(() => {
        URL.revokeObjectURL(a.href);
        a.href = '#';
        delete a.dataset.ready;
      }, 1000);
      return;
    }
    e.preventDefault();
    if (!state.id) return;
    const id = state.id;
    await task('Could not export the session', async () => {
      const blob = await store.exportSession(id, { format });
      if (state.id !== id) return;
      a.href = URL.createObjectURL(blob);
      a.dataset.ready = 'true';
      a.click();
    });
  });
}

// ---------------------------------------------------------------- start

ui.error.querySelector('.dismiss')?.addEventListener('click', clearError);

// Escape dismisses the error banner and disarms "Delete?".
document.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape') return;
  let handled = false;
  for (const del of ui.list.querySelectorAll('[data-armed="true"]')) {
    disarm(/** @type {HTMLElement} */ (del));
    handled = true;
  }
  if (!ui.error.hidden) {
    clearError();
    handled = true;
  }
  if (handled) e.preventDefault();
});

async function start() {
  const hash = location.hash.slice(1); // the session open before a reload (closeSession clears it)
  closeSession();
  try {
    const want = decodeURIComponent(hash);
    try {
      lib = await import('../dist/web.js');
    } catch (e) {
      throw new Error(`Could not load wasm/dist/web.js (${e?.message ?? e}). Build it with "npm run build".`);
    }
    if (typeof lib.IndexedDbStore !== 'function') throw new Error('This build of forkpoint-web has no IndexedDbStore. Rebuild it with "npm run build".');
    await lib.init(); // compiles the WebAssembly module off the main thread
    store = await lib.IndexedDbStore.open(DB);
    await refreshList();
    // `?open=URL` (`forkpoint explore FILE`): import that file, or open it if it was imported before.
    const url = new URLSearchParams(location.search).get('open');
    if (url) {
      const u = new URL(location.href);
      u.searchParams.delete('open');
      history.replaceState(null, '', u.pathname + u.search + u.hash);
      await importFromUrl(url);
    } else if (want && state.sessions.some((s) => s.id === want)) await open(want);
  } catch (e) {
    showError('The explorer could not start', e);
  } finally {
    document.body.dataset.ready = 'true';
  }
}

void start();
