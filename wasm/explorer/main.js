// The session explorer: sessions imported into IndexedDB (left), the branch
// tree of the open session (middle), the context from the selected entry and
// its provider request (right). Everything runs in the page with the web
// build of forkpoint; nothing is sent anywhere.
//
// `?db=NAME` picks the IndexedDB database (default `forkpoint-explorer`);
// the URL's hash remembers the open session across reloads.
import { fill, h, renderContext } from './messages.js';
import { TreeModel, TreeView } from './tree.js';

const DB = new URLSearchParams(location.search).get('db') || 'forkpoint-explorer';
const TARGETS = /** @type {const} */ (['anthropic', 'openai', 'openai-responses', 'google']);
/** Characters of a request body shown (Copy always copies all of it). */
const BODY_SHOWN = 1_000_000;
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
};

/** @type {import('../dist/web.js').IndexedDbStore} */
let store;

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
      return 'This session is already in the list (imported before). Open it there, or delete it first to import it again.';
    case 'INVALID_ID':
      return 'The session id is not valid.';
    case 'ABORTED':
      return 'The import was cancelled; nothing of it was stored.';
    case 'BLOCKED':
      return 'Another tab holds an older version of this database open. Close it and reload.';
    case 'NOT_FOUND':
      return 'It is not in the store any more (deleted in another tab?).';
    default:
      return '';
  }
}

/** Shows an error in the banner; the list and the open session stay as they are. */
function showError(title, e) {
  console.error(e);
  const code = e?.code ?? (e?.name === 'AbortError' ? 'ABORTED' : 'ERROR');
  ui.error.dataset.code = code;
  ui.error.querySelector('.error-title').textContent = title;
  ui.error.querySelector('.error-explain').textContent = explain(e);
  ui.error.querySelector('.error-detail').textContent = `${code}: ${e?.message ?? String(e)}`;
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

const fmtDate = (iso) => (iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '');
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
      // Two clicks: the first arms the button, the second deletes.
      del.addEventListener('click', () => {
        if (del.dataset.armed !== 'true') {
          del.dataset.armed = 'true';
          del.textContent = 'Delete?';
          setTimeout(() => {
            del.dataset.armed = 'false';
            del.textContent = 'Delete';
          }, 4000);
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

async function deleteSession(id) {
  await task('Could not delete the session', async () => {
    await store.deleteSession(id);
    if (state.id === id) closeSession();
    await refreshList();
    status('Session deleted.');
  });
}

// ---------------------------------------------------------------- import

/** Imports files one after the other; a failure is shown and the rest still run. */
async function importFiles(files) {
  for (const file of files) {
    const ctl = new AbortController();
    ui.progress.hidden = false;
    ui.progress.value = 0;
    ui.cancel.hidden = false;
    ui.cancel.onclick = () => ctl.abort();
    status(`Importing ${file.name}…`);
    await task(`Could not import ${file.name}`, async () => {
      try {
        const info = await store.importSession(file, {
          signal: ctl.signal,
          onProgress: (p) => {
            ui.progress.value = p.total ? p.bytes / p.total : 0;
            status(`Importing ${file.name}: ${p.phase === 'read' ? 'reading' : 'storing'} ${fmtBytes(p.bytes)} of ${fmtBytes(p.total)}`);
          },
        });
        clearError();
        await refreshList();
        await open(info.id);
        status(`Imported ${file.name}: ${info.entryCount.toLocaleString()} entries.`);
      } finally {
        ui.progress.hidden = true;
        ui.cancel.hidden = true;
      }
    });
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
  state.id = null;
  state.session = null;
  state.selected = null;
  tree.clear();
  ui.title.textContent = 'No session open';
  ui.summary.replaceChildren();
  ui.nodeInfo.replaceChildren();
  ui.context.replaceChildren(h('p', { class: 'empty' }, 'Open a session, then pick an entry in the tree.'));
  ui.body.textContent = '';
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
  state.id = id;
  state.session = session;
  const model = new TreeModel(session);
  model.runs.forEach((run, i) => {
    if (expanded.includes(run.firstId) && !model.expanded.has(i)) model.toggle(i);
  });
  const select = selectId ?? session.leafId ?? model.rows[model.rows.length - 1]?.id ?? null;
  tree.setModel(model, select);
  if (scroll !== null) ui.tree.scrollTop = scroll;

  ui.title.textContent = info ? displayName(info) : id;
  const meta = session.getMetadata();
  const facts = [
    h('span', {}, count(meta.entryCount, 'entry', 'entries')),
    h('span', {}, count(meta.messageCount, 'message')),
    h('span', {}, count(model.runs.length, 'run')),
    h('span', { 'data-testid': 'leaf-count' }, count(model.leaves, 'leaf', 'leaves')),
    h('span', { 'data-testid': 'branch-point-count' }, count(model.branchPoints, 'branch point')),
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
  const kind = entry.type === 'message' ? entry.message.role : entry.type;
  fill(
    ui.nodeInfo,
    h('strong', {}, kind),
    h('code', { title: `entry id ${id}` }, id.length > 13 ? `${id.slice(0, 12)}…` : id),
    entry.timestamp ? h('span', { class: 'muted' }, fmtDate(entry.timestamp)) : null,
    isLeaf ? h('span', { class: 'badge current' }, 'current leaf') : null,
  );
  ui.nodeInfo.dataset.entryId = id;
  ui.cont.disabled = isLeaf;
  ui.fork.disabled = false;
  try {
    renderContext(ui.context, session.getContext(id));
    ui.context.dataset.entryId = id;
  } catch (e) {
    showError('Could not build the context', e);
  }
  if (state.tab === 'provider') showProvider();
  else ui.body.dataset.stale = 'true';
}

ui.cont.addEventListener('click', () =>
  task('Could not move the current leaf', async () => {
    const id = state.id;
    const entry = state.selected;
    if (!id || !entry) return;
    await store.moveLeaf(id, entry);
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
    await refreshList();
    await open(info.id);
    status(`Forked into a new session from ${entry}.`);
  }),
);

// ---------------------------------------------------------------- provider tab

for (const t of TARGETS) ui.target.append(h('option', { value: t }, t));

function showProvider() {
  const session = state.session;
  const target = /** @type {import('../dist/web.js').ProviderName} */ (ui.target.value);
  if (!session || !state.selected) return;
  let conv;
  try {
    conv = session.toProvider(target, { leafId: state.selected });
  } catch (e) {
    showError(`Could not build the ${target} request`, e);
    return;
  }
  state.body = conv.body;
  let shown = conv.body;
  if (shown.length < 4 * BODY_SHOWN) shown = JSON.stringify(JSON.parse(shown), null, 2);
  ui.body.textContent = shown.length > BODY_SHOWN ? shown.slice(0, BODY_SHOWN) : shown;
  ui.body.dataset.truncated = String(shown.length > BODY_SHOWN);
  ui.body.dataset.target = target;
  ui.body.dataset.entryId = state.selected;
  delete ui.body.dataset.stale;
  renderReport(conv.report, conv.body.length, shown.length > BODY_SHOWN);
}

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
      h('span', { class: 'muted' }, ` · ${fmtBytes(bodyChars)} body${truncated ? ' (shown in part; Copy copies all)' : ''}`),
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

ui.target.addEventListener('change', () => showProvider());

ui.copy.addEventListener('click', async () => {
  const ok = await copyText(state.body);
  ui.copy.textContent = ok ? 'Copied' : 'Copy failed';
  ui.copy.dataset.copied = String(ok);
  setTimeout(() => (ui.copy.textContent = 'Copy'), 1500);
});

// Tabs: Messages | Provider request.
for (const tab of document.querySelectorAll('[role="tab"]')) {
  tab.addEventListener('click', () => selectTab(/** @type {HTMLElement} */ (tab).dataset.tab ?? 'context'));
}
function selectTab(name) {
  state.tab = name;
  for (const tab of document.querySelectorAll('[role="tab"]')) tab.setAttribute('aria-selected', String(/** @type {HTMLElement} */ (tab).dataset.tab === name));
  ui.context.hidden = name !== 'context';
  ui.provider.hidden = name !== 'provider';
  if (name === 'provider' && (ui.body.dataset.stale === 'true' || ui.body.dataset.entryId !== state.selected)) showProvider();
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

async function start() {
  const hash = location.hash.slice(1); // the session open before a reload (closeSession clears it)
  closeSession();
  try {
    const want = decodeURIComponent(hash);
    /** @type {typeof import('../dist/web.js')} */
    let lib;
    try {
      lib = await import('../dist/web.js');
    } catch (e) {
      throw new Error(`Could not load wasm/dist/web.js (${e?.message ?? e}). Build it with "npm run build".`);
    }
    if (typeof lib.IndexedDbStore !== 'function') throw new Error('This build of forkpoint-web has no IndexedDbStore. Rebuild it with "npm run build".');
    store = await lib.IndexedDbStore.open(DB);
    await refreshList();
    if (want && state.sessions.some((s) => s.id === want)) await open(want);
  } catch (e) {
    showError('The explorer could not start', e);
  } finally {
    document.body.dataset.ready = 'true';
  }
}

void start();
