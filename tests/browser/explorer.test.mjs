// The session explorer (wasm/explorer/) in real Chromium with real IndexedDB,
// served by scripts/explorer.mjs. Everything goes through the page: file
// input, clicks, keys, downloads. What the page shows is compared with what
// the library computes from the stored session (loaded again, independently
// of the page's own code) and with the files on disk.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../../scripts/explorer.mjs';

// The same browser and flags as browser.test.mjs.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = join(ROOT, 'tests/fixtures');
const REAL = join(ROOT, '../shared/fixtures/real');
const ARTIFACTS = join(ROOT, 'tests/browser/artifacts');
const realFiles = existsSync(REAL) ? readdirSync(REAL).filter((f) => f.endsWith('.jsonl')).map((f) => join(REAL, f)) : [];
const BRANCHES = join(FIXTURES, 'branches.jsonl');

const skip = !existsSync(CHROMIUM) ? 'Chromium is not installed' : false;

describe('session explorer', { skip }, () => {
  /** @type {import('playwright-core').Browser} */
  let browser;
  /** @type {import('playwright-core').Page} */
  let page;
  let server;
  let tmp;
  const db = `explorer-test-${process.pid}-${Date.now()}`;
  /** Session id of each imported file. */
  const ids = new Map();
  const pageErrors = [];

  before(async () => {
    server = await startServer({ port: 0 });
    tmp = await mkdtemp(join(tmpdir(), 'forkpoint-explorer-'));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.goto(`${server.url}/wasm/explorer/?db=${db}`);
    await idle();
    const missing = await page.evaluate(async () => typeof (await import('/wasm/dist/web.js')).IndexedDbStore !== 'function');
    assert.equal(missing, false, 'wasm/dist/web.js has no IndexedDbStore: run `bash scripts/build.sh`');
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  // ------------------------------------------------------------ helpers

  /** Waits until the page is started and no operation is under way. */
  const idle = () => page.waitForFunction(() => document.body.dataset.ready === 'true' && !document.body.dataset.busy, null, { timeout: 30_000 });

  const listedIds = () => page.$$eval('[data-testid="session-item"]', (els) => els.map((e) => e.getAttribute('data-session-id')));
  const activeId = () => page.$eval('[data-testid="session-item"].active', (e) => e.getAttribute('data-session-id'));
  const bannerShown = () => page.$eval('[data-testid="error-banner"]', (e) => !e.hidden);

  /** Imports a file through the page's file input; resolves to the new session's id. */
  async function importFile(path) {
    const before = await listedIds();
    await page.setInputFiles('[data-testid="file-input"]', path);
    await idle();
    assert.equal(await bannerShown(), false, `no error importing ${path}: ${await page.textContent('[data-testid="error-banner"]')}`);
    const after = await listedIds();
    assert.equal(after.length, before.length + 1, `${path} is listed`);
    const id = after.find((x) => !before.includes(x));
    assert.equal(await activeId(), id, 'the imported session is open');
    return id;
  }

  /** The tree rows drawn, and how many rows the tree has in all. */
  async function treeRows() {
    return page.$eval('[data-testid="tree"]', (tree) => ({
      total: Number(tree.dataset.rowCount),
      rows: [...tree.querySelectorAll('[data-testid="tree-row"]')].map((g) => ({
        id: g.getAttribute('data-entry-id'),
        kind: g.getAttribute('data-kind'),
        leaf: g.getAttribute('data-leaf') === 'true',
        branchPoint: g.getAttribute('data-branch-point') === 'true',
        current: g.getAttribute('data-current') === 'true',
        selected: g.getAttribute('aria-selected') === 'true',
      })),
    }));
  }

  /**
   * What the library says about stored session `id`: its pi text exported
   * from the store and loaded with `Session.fromJsonl` in the page (not the
   * explorer's code), with the context roles from the first few leaves and
   * branch points and from `extra` entries, and the provider bodies from
   * `extra[0]`.
   */
  async function libraryFacts(id, extra = [], targets = []) {
    return page.evaluate(
      async ({ db, id, extra, targets }) => {
        const { IndexedDbStore, Session } = await import('/wasm/dist/web.js');
        const store = await IndexedDbStore.open(db);
        try {
          const bytes = new Uint8Array(await (await store.exportSession(id, { format: 'pi' })).arrayBuffer());
          const s = Session.fromJsonl(bytes);
          const b = s.getBranch();
          const leaves = b.getLeaves().map((n) => n.id);
          const branchPoints = b.getBranchPoints().map((n) => n.id);
          const contexts = {};
          for (const x of [...leaves.slice(0, 4), ...branchPoints.slice(0, 3), ...extra]) contexts[x] = s.getContext(x).map((m) => m.role);
          // Thinking and tool-call blocks in the context from `extra[0]`.
          const blocks = { thinking: 0, toolCall: 0 };
          for (const m of extra.length ? s.getContext(extra[0]) : []) {
            for (const b of Array.isArray(m.content) ? m.content : []) if (b.type in blocks) blocks[b.type]++;
          }
          const provider = {};
          for (const t of targets) provider[t] = s.toProvider(t, { leafId: extra[0] });
          const tree = b.getTree();
          return { leaves, branchPoints, leafId: s.leafId, contexts, blocks, provider, runs: tree.length, info: await store.getSessionInfo(id) };
        } finally {
          await store.close();
        }
      },
      { db, id, extra, targets },
    );
  }

  /** Clicks a tree row (scrolling the tree to it first when it is not drawn). */
  async function clickRow(entryId) {
    await page.click(`[data-testid="tree-row"][data-entry-id="${entryId}"]`);
    await page.waitForFunction((id) => document.querySelector('[data-testid="context"]')?.dataset.entryId === id, entryId);
  }

  /** Roles of the messages shown in the context panel (all of them: earlier ones are drawn first, a page at a time). */
  async function shownRoles() {
    for (let earlier; (earlier = await page.$('[data-testid="show-earlier"]')); ) await earlier.click();
    return page.$$eval('[data-testid="context-message"]', (els) => els.map((e) => e.getAttribute('data-role')));
  }

  /** Checks the open session's tree against the library's view of stored session `id`. */
  async function checkTree(id, label) {
    const lib = await libraryFacts(id);
    const { total, rows } = await treeRows();
    assert.equal(rows.length, total, `${label}: the whole tree is drawn (it fits)`);
    assert.equal(total, lib.runs, `${label}: one row per run`);
    assert.deepEqual(rows.filter((r) => r.leaf).map((r) => r.id).sort(), [...lib.leaves].sort(), `${label}: leaves`);
    assert.deepEqual(rows.filter((r) => r.branchPoint).map((r) => r.id).sort(), [...lib.branchPoints].sort(), `${label}: branch points`);
    assert.deepEqual(rows.filter((r) => r.current).map((r) => r.id), [lib.leafId], `${label}: one current leaf marker, on the current leaf`);
    const summary = await page.$eval('[data-testid="tree-summary"]', (e) => ({ ...e.dataset }));
    assert.equal(Number(summary.leaves), lib.leaves.length);
    assert.equal(Number(summary.branchPoints), lib.branchPoints.length);
    return lib;
  }

  // ------------------------------------------------------------ tests

  it('imports real sessions and a branched pi session; the tree, contexts and export match the library and the file', async () => {
    assert.ok(realFiles.length >= 4, `real sessions in ${REAL}`);
    for (const path of [...realFiles, BRANCHES]) {
      const name = path.split('/').pop();
      const id = await importFile(path);
      ids.set(name, id);
      const lib = await checkTree(id, name);
      // Clicking a node shows the context from it (a few leaves and branch points per file).
      for (const node of [...lib.leaves.slice(0, 4), ...lib.branchPoints.slice(0, 3)]) {
        await clickRow(node);
        assert.deepEqual(await shownRoles(), lib.contexts[node], `${name}: context from ${node}`);
        const rows = (await treeRows()).rows;
        assert.deepEqual(rows.filter((r) => r.selected).map((r) => r.id), [node], `${name}: ${node} is the selected row`);
      }
      // The export link downloads the bytes imported.
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="export-link"]')]);
      const got = await readFile(await download.path());
      assert.ok(got.equals(await readFile(path)), `${name}: export equals the original bytes`);
    }
    assert.equal(await page.$eval('[data-testid="session-list"]', (e) => e.querySelectorAll('[data-testid="session-item"]').length), realFiles.length + 1);
  });

  it('imports a file dropped on the page; compactions are marked', async () => {
    const before = await listedIds();
    const dragging = await page.evaluate(async () => {
      const bytes = await (await fetch('/tests/fixtures/compactions.jsonl')).arrayBuffer();
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], 'compactions.jsonl'));
      const zone = document.querySelector('[data-testid="drop-zone"]');
      zone.dispatchEvent(new DragEvent('dragenter', { dataTransfer: dt, bubbles: true }));
      const shown = zone.classList.contains('dragging');
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
      return shown;
    });
    assert.equal(dragging, true, 'the drop zone shows the drag');
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="session-item"]').length === n, before.length + 1);
    await idle();
    const id = (await listedIds()).find((x) => !before.includes(x));
    assert.equal(await activeId(), id);
    const lib = await checkTree(id, 'compactions.jsonl');
    const marked = await page.$$eval('[data-testid="tree-row"] .tag.compaction', (els) => els.map((e) => e.textContent));
    assert.ok(marked.length > 0, 'a compaction tag is drawn');
    assert.deepEqual(await shownRoles(), lib.contexts[lib.leafId] ?? (await libraryFacts(id, [lib.leafId])).contexts[lib.leafId], 'the context from the current leaf is shown');
    ids.set('compactions.jsonl', id);
  });

  it('shows a clear error for a corrupted and an unsupported file, and keeps the list', async () => {
    const web = await import('forkpoint-web');
    const cases = [
      [join(FIXTURES, 'corrupt-middle.jsonl'), 'CORRUPTED_DATA'],
      [join(FIXTURES, 'not-sessions/plain-text.jsonl'), 'UNSUPPORTED_FORMAT'],
    ];
    for (const [path, code] of cases) {
      // What the library (Node build) says about the same bytes.
      const err = await web.importSession(await readFile(path)).then(
        () => null,
        (e) => e,
      );
      assert.ok(err instanceof web.ForkpointError, `${path} fails to import`);
      assert.equal(err.code, code);
      const before = await listedIds();
      const openBefore = await activeId();
      await page.setInputFiles('[data-testid="file-input"]', path);
      await idle();
      assert.equal(await bannerShown(), true, `${path}: the error is shown`);
      const banner = await page.$eval('[data-testid="error-banner"]', (e) => ({ code: e.dataset.code, text: e.textContent.replace(/\s+/g, ' ') }));
      assert.equal(banner.code, code);
      assert.ok(banner.text.includes(path.split('/').pop()), 'the banner names the file');
      if (err.line) assert.ok(banner.text.includes(`line ${err.line}`), `the banner gives the line: ${banner.text}`);
      assert.deepEqual(await listedIds(), before, 'nothing listed disappears, nothing is added');
      assert.equal(await activeId(), openBefore, 'the open session stays open');
      assert.ok((await treeRows()).rows.length > 0);
      // The first banner goes with Escape, the second with its button.
      if (code === 'CORRUPTED_DATA') await page.keyboard.press('Escape');
      else await page.click('[data-testid="error-banner"] .dismiss');
      assert.equal(await bannerShown(), false);
    }
    // The same file again: it is already there, and the page says so.
    const before = await listedIds();
    await page.setInputFiles('[data-testid="file-input"]', BRANCHES);
    await idle();
    const again = await page.$eval('[data-testid="error-banner"]', (e) => ({ code: e.dataset.code, text: e.textContent }));
    assert.equal(again.code, 'ALREADY_EXISTS');
    assert.match(again.text, /already in the list/);
    assert.deepEqual(await listedIds(), before);
    await page.click('[data-testid="error-banner"] .dismiss');
  });

  it('a session already imported: "Open it" selects it (also from a .gz), "Import as a copy" adds one under a new id', async () => {
    const branchesId = ids.get('branches.jsonl');
    await page.click(`[data-testid="session-item"][data-session-id="${ids.get('compactions.jsonl')}"] [data-testid="open-session"]`);
    await idle();
    // A gzip file of the same pi session: its header line names it.
    const gz = join(tmp, 'branches-again.jsonl.gz');
    await writeFile(gz, gzipSync(await readFile(BRANCHES)));
    await page.setInputFiles('[data-testid="file-input"]', gz);
    await idle();
    assert.equal(await page.$eval('[data-testid="error-banner"]', (e) => e.dataset.code), 'ALREADY_EXISTS');
    await page.click('[data-testid="open-existing"]');
    await idle();
    assert.equal(await activeId(), branchesId, '"Open it" opened the session already there');
    assert.equal(await bannerShown(), false);

    const before = await listedIds();
    await page.setInputFiles('[data-testid="file-input"]', BRANCHES);
    await idle();
    await page.click('[data-testid="import-copy"]');
    await idle();
    assert.equal(await bannerShown(), false);
    const after = await listedIds();
    assert.equal(after.length, before.length + 1, 'the copy is listed');
    const copy = after.find((x) => !before.includes(x));
    assert.notEqual(copy, branchesId);
    assert.equal(await activeId(), copy, 'the copy is open');
    assert.match(await page.textContent(`[data-testid="session-item"][data-session-id="${copy}"] .name`), /\(copy\)$/);
    await checkTree(copy, 'copy');
    ids.set('copy', copy);
  });

  it('a batch import with failures: the others are imported, one banner lists each failure with its reason', async () => {
    const files = ['crlf.jsonl', 'corrupt-middle.jsonl', 'deep-nesting.jsonl', 'v3-basic.jsonl'].map((f) => join(FIXTURES, f));
    const before = await listedIds();
    await page.setInputFiles('[data-testid="file-input"]', files);
    await idle();
    assert.equal((await listedIds()).length, before.length + 2, 'the two good files are listed');
    assert.equal(await bannerShown(), true, 'the failures stay on screen after the last success');
    const banner = await page.$eval('[data-testid="error-banner"]', (e) => ({
      title: e.querySelector('.error-title').textContent,
      items: [...e.querySelectorAll('[data-testid="error-list"] li')].map((li) => ({ code: li.dataset.code, text: li.textContent })),
    }));
    assert.equal(banner.title, '2 imported, 2 failed');
    assert.deepEqual(banner.items.map((i) => i.code), ['CORRUPTED_DATA', 'LIMIT_EXCEEDED']);
    assert.match(banner.items[0].text, /^corrupt-middle\.jsonl — The file is damaged at line \d+/);
    assert.match(banner.items[1].text, /^deep-nesting\.jsonl — The file goes beyond a limit/);
    await page.keyboard.press('Escape');
    assert.equal(await bannerShown(), false);
  });

  it('a slow mouse click on a row of the unfocused tree selects it', async () => {
    await page.click(`[data-testid="session-item"][data-session-id="${ids.get('branches.jsonl')}"] [data-testid="open-session"]`);
    await idle();
    const { rows } = await treeRows();
    for (const r of [rows[2], rows[0]]) {
      await page.click('h1'); // the focus leaves the tree
      assert.notEqual(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'tree');
      const box = await (await page.$(`[data-testid="tree-row"][data-entry-id="${r.id}"]`)).boundingBox();
      await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2);
      await page.mouse.down();
      await page.waitForTimeout(120);
      await page.mouse.up();
      await page.waitForFunction((id) => document.querySelector('[data-testid="context"]')?.dataset.entryId === id, r.id, { timeout: 2000 });
      assert.deepEqual((await treeRows()).rows.filter((x) => x.selected).map((x) => x.id), [r.id]);
    }
  });

  it('tree rows tell screen readers what they are: aria-label with role, text, state and labels; aria-level by runs', async () => {
    const rows = await page.$$eval('[data-testid="tree-row"]', (gs) =>
      gs.map((g) => ({ id: g.getAttribute('data-entry-id'), label: g.getAttribute('aria-label'), level: Number(g.getAttribute('aria-level')), expanded: g.getAttribute('aria-expanded'), bp: g.getAttribute('data-branch-point') === 'true', leaf: g.getAttribute('data-leaf') === 'true', current: g.getAttribute('data-current') === 'true', text: g.querySelector('.preview').textContent })),
    );
    const lib = await page.evaluate(async ({ db, id }) => {
      const { IndexedDbStore } = await import('/wasm/dist/web.js');
      const store = await IndexedDbStore.open(db);
      try {
        const s = await store.loadSession(id);
        const runs = s.getBranch().getTree();
        const level = (i) => (runs[i].parent === null ? 1 : 1 + level(runs[i].parent));
        return runs.map((r, i) => ({ id: r.lastId, level: level(i), entries: r.entries, branches: r.children.length, labels: r.labels.map((l) => l.label) }));
      } finally {
        await store.close();
      }
    }, { db, id: ids.get('branches.jsonl') });
    assert.equal(rows.length, lib.length);
    for (const row of rows) {
      const run = lib.find((r) => r.id === row.id);
      assert.ok(row.label && /^(user|assistant|\w[\w ]*): /.test(row.label), `a role first: ${row.label}`);
      assert.ok(row.label.includes(row.text.replace(/…$/, '')), `the text: ${row.label}`);
      assert.equal(row.level, run.level, `aria-level is the depth in runs: ${row.label}`);
      assert.equal(row.expanded, run.entries > 1 ? 'false' : null, 'aria-expanded on runs that expand');
      if (row.bp) assert.ok(row.label.includes(`branch point with ${run.branches} branches`), row.label);
      if (row.current) assert.ok(row.label.includes('current leaf'), row.label);
      else if (row.leaf) assert.ok(/\bleaf\b/.test(row.label), row.label);
      for (const l of run.labels) assert.ok(row.label.includes(l), `the label ${l}: ${row.label}`);
    }
    assert.ok(lib.some((r) => r.labels.length) && lib.some((r) => r.level > 2), 'the fixture has labels and depth');
  });

  it('keyboard: arrows move the focus between rows, Enter shows the context', async () => {
    await page.click(`[data-testid="session-item"][data-session-id="${ids.get('branches.jsonl')}"] [data-testid="open-session"]`);
    await idle();
    const { rows } = await treeRows();
    const lib = await libraryFacts(ids.get('branches.jsonl'), rows.map((r) => r.id));
    await clickRow(rows[0].id);
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'tree', 'the tree has the focus');
    await page.keyboard.press('ArrowDown');
    // The focused row is marked (visible focus) before Enter selects it.
    assert.equal(await page.$eval('[data-testid="tree-row"].active', (g) => g.getAttribute('data-entry-id')), rows[1].id);
    await page.keyboard.press('Enter');
    await page.waitForFunction((id) => document.querySelector('[data-testid="context"]')?.dataset.entryId === id, rows[1].id);
    assert.deepEqual(await shownRoles(), lib.contexts[rows[1].id]);
    // Left goes to the parent run's row, Right to the first child.
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('Enter');
    await page.waitForFunction((id) => document.querySelector('[data-testid="context"]')?.dataset.entryId === id, rows[0].id);
    assert.deepEqual(await shownRoles(), lib.contexts[rows[0].id]);
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Enter');
    await page.waitForFunction((id) => document.querySelector('[data-testid="context"]')?.dataset.entryId === id, rows[1].id);
  });

  it('provider picker: each provider\'s body parses as JSON and equals the library\'s, with its report; Copy copies it', async () => {
    const targets = await page.$$eval('[data-testid="provider-select"] option', (os) => os.map((o) => o.value));
    assert.deepEqual([...targets].sort(), ['anthropic', 'google', 'openai', 'openai-responses']);
    // A node with tool calls and thinking: the current leaf of a Claude Code session.
    const id = ids.get('marot-spotter_tool_heavy.jsonl');
    await page.click(`[data-testid="session-item"][data-session-id="${id}"] [data-testid="open-session"]`);
    await idle();
    const leaf = (await treeRows()).rows.find((r) => r.current).id;
    await clickRow(leaf);
    const lib = await libraryFacts(id, [leaf], targets);
    // The messages show every tool call (unfolded) and every thinking block (folded).
    const shown = await page.$eval('[data-testid="context"]', (c) => ({
      thinking: [...c.querySelectorAll('details[data-testid="thinking"]')].map((d) => d.open),
      toolCalls: c.querySelectorAll('[data-testid="tool-call"]').length,
    }));
    assert.ok(lib.blocks.thinking > 0 && lib.blocks.toolCall > 0, 'the session has thinking and tool calls');
    assert.deepEqual(shown.thinking, Array(lib.blocks.thinking).fill(false), 'thinking is shown folded');
    assert.equal(shown.toolCalls, lib.blocks.toolCall);
    await page.click('[data-testid="tab-provider"]');
    for (const t of targets) {
      await page.selectOption('[data-testid="provider-select"]', t);
      await page.waitForFunction((t) => document.querySelector('[data-testid="provider-body"]')?.dataset.target === t, t);
      const shown = await page.textContent('[data-testid="provider-body"]');
      assert.deepEqual(JSON.parse(shown), JSON.parse(lib.provider[t].body), `${t}: the body shown`);
      const report = await page.$eval('[data-testid="provider-report"]', (e) => ({
        compatible: e.dataset.compatible,
        steps: [...e.querySelectorAll('[data-testid="report-step"]')].map((s) => s.getAttribute('data-code')),
        warnings: [...e.querySelectorAll('[data-testid="report-warnings"] li')].map((li) => li.textContent),
      }));
      assert.equal(report.compatible, String(lib.provider[t].report.compatible), `${t}: compatible`);
      assert.deepEqual(report.steps, lib.provider[t].report.steps.map((s) => s.code), `${t}: steps`);
      assert.deepEqual(report.warnings, lib.provider[t].report.warnings, `${t}: warnings`);
      await page.click('[data-testid="copy-body"]');
      await page.waitForFunction(() => document.querySelector('[data-testid="copy-body"]')?.dataset.copied === 'true');
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), lib.provider[t].body, `${t}: Copy copies the exact body`);
    }
    // Some target loses something from this session, and the page says so.
    assert.ok(targets.some((t) => !lib.provider[t].report.compatible));
    await page.click('[data-testid="tab-context"]');
  });

  it('"continue from here" moves the current leaf (also to an inner entry) and it survives a reload; "fork" adds a session', async () => {
    const id = ids.get('branches.jsonl');
    await page.click(`[data-testid="session-item"][data-session-id="${id}"] [data-testid="open-session"]`);
    await idle();
    const start = await libraryFacts(id);
    const other = start.leaves.find((l) => l !== start.leafId);
    await clickRow(other);
    await page.click('[data-testid="continue"]');
    await idle();
    let lib = await libraryFacts(id);
    assert.equal(lib.leafId, other, 'the store moved the leaf');
    assert.deepEqual((await treeRows()).rows.filter((r) => r.current).map((r) => r.id), [other], 'the marker moved');

    // An inner entry: expand the current run and continue from its first entry.
    await page.click(`[data-testid="tree-row"][data-entry-id="${other}"] [data-action="toggle"]`);
    const expanded = (await treeRows()).rows;
    const inner = expanded.find((r) => r.kind === 'entry' && r.id !== other);
    assert.ok(inner, 'the run expanded into entry rows');
    assert.ok(expanded.length > start.runs, 'more rows than runs');
    // Only the last entry of a run is a leaf or a branch point.
    assert.deepEqual(expanded.filter((r) => r.leaf).map((r) => r.id).sort(), [...start.leaves].sort());
    assert.deepEqual(expanded.filter((r) => r.branchPoint).map((r) => r.id).sort(), [...start.branchPoints].sort());
    await clickRow(inner.id);
    await page.click('[data-testid="continue"]');
    await idle();
    lib = await libraryFacts(id);
    assert.equal(lib.leafId, inner.id);
    await page.reload();
    await idle();
    assert.equal(await activeId(), id, 'the open session is reopened after a reload');
    assert.deepEqual((await treeRows()).rows.filter((r) => r.current).map((r) => r.id), [inner.id], 'the marker is on the inner entry after a reload');

    // Fork from a branch point: a new session, listed and opened.
    const before = await listedIds();
    const from = start.branchPoints[start.branchPoints.length - 1];
    await clickRow(from);
    await page.click('[data-testid="fork"]');
    await idle();
    const after = await listedIds();
    assert.equal(after.length, before.length + 1);
    const forkId = after.find((x) => !before.includes(x));
    assert.equal(await activeId(), forkId, 'the fork is open');
    const forked = await checkTree(forkId, 'fork');
    assert.equal(forked.info.parentSession, start.info.id);
    assert.equal(forked.leafId, from, 'the fork ends at the entry it was made from');
    ids.set('fork', forkId);
  });

  it('lists the sessions again after a reload, and deletes one', async () => {
    const before = await listedIds();
    await page.reload();
    await idle();
    assert.deepEqual(await listedIds(), before, 'the same sessions after a reload');
    const forkId = ids.get('fork');
    const del = `[data-testid="session-item"][data-session-id="${forkId}"] [data-testid="delete-session"]`;
    await page.hover(`[data-testid="session-item"][data-session-id="${forkId}"]`);
    await page.click(del);
    assert.deepEqual(await listedIds(), before, 'the first click only arms the button');
    await page.click(del);
    await idle();
    assert.deepEqual(await listedIds(), before.filter((x) => x !== forkId));
    const stored = await page.evaluate(async (db) => {
      const { IndexedDbStore } = await import('/wasm/dist/web.js');
      const store = await IndexedDbStore.open(db);
      try {
        return (await store.listSessions()).map((s) => s.id);
      } finally {
        await store.close();
      }
    }, db);
    assert.deepEqual([...stored].sort(), before.filter((x) => x !== forkId).sort(), 'deleted from IndexedDB');
  });

  it('draws only the rows in view of a tree with thousands of runs', async () => {
    // A conversation where every turn also has an abandoned side branch.
    const turns = 3000;
    const lines = [JSON.stringify({ type: 'session', version: 3, id: 'explorer-wide-tree', timestamp: new Date(0).toISOString(), cwd: '/' })];
    const ts = (i) => new Date(1_700_000_000_000 + i * 1000).toISOString();
    let parent = null;
    for (let i = 0; i < turns; i++) {
      const q = `q${i}`;
      lines.push(JSON.stringify({ type: 'message', id: q, parentId: parent, timestamp: ts(i), message: { role: 'user', content: [{ type: 'text', text: `question ${i}` }], timestamp: i } }));
      lines.push(JSON.stringify({ type: 'message', id: `x${i}`, parentId: q, timestamp: ts(i), message: { role: 'user', content: [{ type: 'text', text: `abandoned ${i}` }], timestamp: i } }));
      lines.push(JSON.stringify({ type: 'message', id: `a${i}`, parentId: q, timestamp: ts(i), message: { role: 'assistant', content: [{ type: 'text', text: `answer ${i}` }], api: 'anthropic-messages', provider: 'anthropic', model: 'm', usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: 'stop', timestamp: i } }));
      parent = `a${i}`;
    }
    const path = join(tmp, 'wide-tree.jsonl');
    await writeFile(path, lines.join('\n') + '\n');
    const t0 = performance.now();
    const id = await importFile(path);
    const openMs = performance.now() - t0;
    const lib = await libraryFacts(id);
    const { total, rows } = await treeRows();
    assert.equal(total, lib.runs);
    assert.ok(total > 2 * turns, `${total} rows`);
    assert.ok(rows.length < 80, `only the rows in view are drawn (${rows.length})`);
    // The current leaf is at the bottom and the view was scrolled to it.
    assert.ok(rows.some((r) => r.current && r.id === lib.leafId));
    // Home, then End: the first and the last rows are drawn in turn.
    await page.focus('[data-testid="tree"]');
    await page.keyboard.press('Home');
    await page.waitForFunction(() => document.querySelector('[data-testid="tree"]').scrollTop === 0);
    await page.waitForFunction(() => document.querySelector('[data-testid="tree-row"][data-row="0"]'));
    const t1 = performance.now();
    await page.keyboard.press('End');
    await page.waitForFunction((last) => document.querySelector(`[data-testid="tree-row"][data-row="${last}"].active`), total - 1);
    const scrollMs = performance.now() - t1;
    const end = await treeRows();
    assert.ok(end.rows.length < 80);
    // The last row of a depth-first drawing is a leaf.
    assert.ok(lib.leaves.includes(await page.$eval(`[data-testid="tree-row"][data-row="${total - 1}"]`, (g) => g.getAttribute('data-entry-id'))));
    console.log(`# wide tree: ${total} rows; import and open ${openMs.toFixed(0)} ms, jump to the end ${scrollMs.toFixed(0)} ms`);
  });

  /**
   * Writes a pi session whose messages hang off one root message, each its own
   * leaf (`chains`: arrays of messages, each chain a branch); resolves to the
   * file's path and the id of each chain's last entry.
   */
  async function piSession(name, chains) {
    const ts = (i) => new Date(1_700_000_000_000 + i * 1000).toISOString();
    const lines = [
      JSON.stringify({ type: 'session', version: 3, id: `explorer-${name}-${process.pid}`, timestamp: ts(0), cwd: '/' }),
      JSON.stringify({ type: 'message', id: 'root', parentId: null, timestamp: ts(1), message: { role: 'user', content: [{ type: 'text', text: 'the root message' }], timestamp: 1 } }),
    ];
    let n = 0;
    const leaves = chains.map((chain) => {
      let parent = 'root';
      for (const message of chain) {
        const id = `m${++n}`;
        lines.push(JSON.stringify({ type: 'message', id, parentId: parent, timestamp: ts(n + 1), message }));
        parent = id;
      }
      return parent;
    });
    const path = join(tmp, `${name}.jsonl`);
    await writeFile(path, lines.join('\n') + '\n');
    return { path, leaves };
  }

  /** The last message shown in the context panel: its role, text, whether it holds a render-error box. */
  const lastShown = () =>
    page.$eval('[data-testid="context"]', (c) => {
      const all = c.querySelectorAll('[data-testid="context-message"]');
      const m = all[all.length - 1];
      return { count: all.length, role: m.getAttribute('data-role'), text: m.textContent, broken: m.hasAttribute('data-render-error') };
    });

  it('messages of every shape the core accepts are drawn (text, blocks or folded JSON), with no error banner', async () => {
    const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    const assistant = (content, extra = {}) => ({ role: 'assistant', content, api: 'anthropic-messages', provider: 'anthropic', model: 'm', usage, stopReason: 'stop', timestamp: 5, ...extra });
    // Each case: the messages of one branch, and strings the last one must show.
    const cases = [
      [[{ role: 'user', content: { note: 'content-is-an-object', n: 7 }, timestamp: 2 }], ['content-is-an-object', '"n": 7']],
      [[{ role: 'user', content: null, timestamp: 2 }], ['(no content)']],
      [[assistant(4242)], ['4242']],
      [[{ role: 'user', content: 'content-is-a-string', timestamp: 2 }], ['content-is-a-string']],
      [[assistant([{ type: 'hologram', payload: 'unknown-block-payload' }, { type: 'text', text: 98765 }, { type: 'text', text: { deep: 'text-is-an-object' } }])], ['hologram block', 'unknown-block-payload', '98765', 'text-is-an-object']],
      [[assistant(['a-bare-string-block', null, 3.5, [1, 2]])], ['a-bare-string-block', 'null', '3.5']],
      [[assistant([{ type: 'thinking', thinking: { t: 'thinking-is-an-object' } }, { type: 'image', data: 5, mimeType: { x: 1 } }, { type: 'toolCall', id: 17, name: ['n'], arguments: 'not json at all' }])], ['thinking-is-an-object', '[image]', 'not json at all']],
      [
        [
          assistant([{ type: 'toolCall', id: 'call-str', name: 'bash', arguments: '{"cmd":"ls -la string-arguments"}' }], { stopReason: 'toolUse' }),
          { role: 'toolResult', toolCallId: 'call-str', toolName: 'bash', content: { stdout: 'result-content-is-an-object' }, isError: false, timestamp: 6 },
        ],
        ['result-content-is-an-object'],
      ],
      [[{ role: 'toolResult', toolCallId: { odd: 1 }, toolName: 42, content: [{ type: 'text', text: 31337 }, 'bare-result-string'], isError: true, timestamp: 'not a date' }], ['31337', 'bare-result-string', 'not a date']],
      [[{ role: 'bashExecution', command: ['ls'], output: { o: 'output-is-an-object' }, exitCode: 'x', timestamp: 2 }], ['output-is-an-object', 'exit x']],
      [[{ role: 'branchSummary', summary: 12, tokensBefore: 'many', fromId: 'root', timestamp: 2 }], ['many tokens before']],
      [[{ role: 'constructor', content: 'role-named-constructor', timestamp: 1e300 }], ['constructor', 'role-named-constructor']],
    ];
    const { path, leaves } = await piSession('shapes', cases.map(([chain]) => chain));
    const id = await importFile(path); // the import asserts there is no error banner
    const lib = await libraryFacts(id, leaves);
    for (const [i, [chain, want]] of cases.entries()) {
      await clickRow(leaves[i]);
      assert.equal(await bannerShown(), false, `case ${i}: no error banner: ${await page.textContent('[data-testid="error-banner"]')}`);
      assert.deepEqual(await shownRoles(), lib.contexts[leaves[i]], `case ${i}: one article per message of the context`);
      const last = await lastShown();
      assert.equal(last.broken, false, `case ${i}: drawn, not a render-error box: ${last.text}`);
      assert.equal(last.role, String(chain[chain.length - 1].role));
      for (const w of want) assert.ok(last.text.includes(w), `case ${i}: shows ${JSON.stringify(w)}: ${last.text}`);
      // Every tree row (all drawn) says something of its entry.
      const labels = await page.$$eval('[data-testid="tree-row"]', (gs) => gs.map((g) => g.getAttribute('aria-label')));
      assert.ok(labels.every((l) => l && !l.includes('cannot describe')), labels.join('\n'));
    }
    // The page still works: the provider tab builds a request from the leaf with string arguments, and other sessions open.
    await clickRow(leaves[7]);
    await page.click('[data-testid="tab-provider"]');
    await page.waitForFunction(() => document.querySelector('[data-testid="provider-body"]')?.dataset.target);
    assert.equal(await bannerShown(), false);
    await page.click('[data-testid="tab-context"]');
    const other = (await listedIds()).find((x) => x !== id);
    if (other) {
      await page.click(`[data-testid="session-item"][data-session-id="${other}"] [data-testid="open-session"]`);
      await idle();
      assert.equal(await activeId(), other);
      assert.equal(await bannerShown(), false);
      await page.click(`[data-testid="session-item"][data-session-id="${id}"] [data-testid="open-session"]`);
      await idle();
    }
    // After a reload the session opens again, with its whole tree.
    await page.reload();
    await idle();
    assert.equal(await activeId(), id);
    assert.equal((await treeRows()).total, cases.length + 1);
    assert.equal(await bannerShown(), false);
  });

  it('a message the page fails to draw gets its own "cannot render this entry" box; the rest of the context is drawn', async () => {
    const { path, leaves } = await piSession('broken-draw', [[{ role: 'user', content: 'drawn-after-the-broken-one', timestamp: 3 }]]);
    await importFile(path);
    // A fault in the page's drawing code, made on purpose: formatting the time
    // of the root message (timestamp 1) throws.
    await page.evaluate(() => {
      const orig = Date.prototype.toLocaleString;
      window.__restoreDate = () => (Date.prototype.toLocaleString = orig);
      Date.prototype.toLocaleString = function (...a) {
        if (this.getTime() === 1) throw new Error('injected drawing fault');
        return orig.apply(this, a);
      };
    });
    try {
      await clickRow(leaves[0]);
      const shown = await page.$$eval('[data-testid="context-message"]', (els) => els.map((e) => ({ broken: e.hasAttribute('data-render-error'), role: e.getAttribute('data-role'), text: e.textContent })));
      assert.equal(shown.length, 2);
      assert.equal(shown[0].broken, true, 'the root message is a render-error box');
      assert.equal(shown[0].role, 'user');
      assert.match(shown[0].text, /cannot render this entry: injected drawing fault/);
      assert.ok(shown[0].text.includes('"the root message"'), 'with the message as JSON');
      assert.equal(shown[1].broken, false, 'the next message is drawn');
      assert.ok(shown[1].text.includes('drawn-after-the-broken-one'));
      assert.equal(await bannerShown(), false, 'no banner');
    } finally {
      await page.evaluate(() => window.__restoreDate());
    }
  });

  it('a 300 KB text is drawn in pages: "show next" adds up to 100 K characters, "show all" the rest, and the whole text ends up in the page', async () => {
    let text = '';
    for (let i = 0; text.length < 300_000; i++) text += `line ${i}: 第${i}行 some words and 😀 emoji\n`;
    text += 'the very end of the long text, 40 chars.';
    const tail = text.slice(-40);
    const { path, leaves } = await piSession('long-text', [[{ role: 'user', content: [{ type: 'text', text }], timestamp: 2 }]]);
    const id = await importFile(path);
    await clickRow(leaves[0]);
    const state = () =>
      page.$eval('[data-testid="context"] [data-testid="long-text"]', (d) => ({
        length: Number(d.dataset.length),
        drawn: d.textContent.length,
        pages: d.querySelectorAll('.page').length,
        next: !!d.parentElement.querySelector('[data-testid="show-next"]:not([hidden])'),
        all: !!d.parentElement.querySelector('[data-testid="show-all"]'),
        text: d.textContent,
      }));
    let s = await state();
    assert.equal(s.length, text.length);
    assert.ok(s.drawn >= 10_000 && s.drawn <= 20_000, `the first page only: ${s.drawn}`);
    assert.equal(s.pages, 1);
    assert.ok(text.startsWith(s.text), 'the first page is the start of the text');
    assert.ok(s.next && s.all, 'both buttons are offered');
    await page.click('[data-testid="context"] [data-testid="show-next"]');
    const after = await state();
    // Pages end at a line break in their second half: 10 to 20 K characters each.
    assert.equal(after.pages, 6, '"show next" added five pages');
    assert.ok(after.drawn - s.drawn >= 50_000 && after.drawn - s.drawn <= 100_000, `"show next" drew ${after.drawn - s.drawn} more`);
    assert.ok(text.startsWith(after.text));
    await page.click('[data-testid="context"] [data-testid="show-all"]');
    s = await state();
    assert.equal(s.drawn, text.length);
    assert.equal(s.text, text, 'the whole text, in order, nothing added');
    assert.equal(s.all || s.next, false, 'no buttons left');
    assert.ok(s.pages >= 15, `${s.pages} pages`);
    // The end of the text can be scrolled to and is on screen.
    const visible = await page.evaluate((tail) => {
      const d = document.querySelector('[data-testid="context"] [data-testid="long-text"]');
      const last = d.lastElementChild;
      last.scrollIntoView({ block: 'end' });
      const r = last.getBoundingClientRect();
      const c = document.querySelector('[data-testid="context"]').getBoundingClientRect();
      return last.textContent.endsWith(tail) && r.height > 0 && r.bottom <= c.bottom + 1 && r.bottom > c.top;
    }, tail);
    assert.equal(visible, true, 'the last page, holding the last 40 characters, is drawn in view');
    assert.equal(await bannerShown(), false);

    // The provider request (over 200 K characters) is drawn in pages too; "show more" draws the rest.
    const lib = await libraryFacts(id, [leaves[0]], ['anthropic']);
    await page.click('[data-testid="tab-provider"]');
    await page.selectOption('[data-testid="provider-select"]', 'anthropic');
    await page.waitForFunction(() => document.querySelector('[data-testid="provider-body"]')?.dataset.target === 'anthropic');
    const body = () => page.$eval('[data-testid="provider-body"]', (b) => ({ truncated: b.dataset.truncated, pages: b.querySelectorAll('.page').length, text: b.textContent }));
    let b = await body();
    assert.equal(b.truncated, 'true', 'drawn in part at first');
    assert.ok(b.pages > 1 && b.text.length <= 200_000, `${b.pages} pages, ${b.text.length} characters`);
    for (let n = 0; n < 10 && (await page.isVisible('[data-testid="body-more"]')); n++) await page.click('[data-testid="body-more"]');
    b = await body();
    assert.equal(b.truncated, 'false');
    assert.deepEqual(JSON.parse(b.text), JSON.parse(lib.provider.anthropic.body), 'the whole body, in order');
    await page.click('[data-testid="tab-context"]');
  });

  it('screenshot of a branched session (tests/browser/artifacts/explorer.png)', async () => {
    await page.click(`[data-testid="session-item"][data-session-id="${ids.get('marot-spotter_subagent.jsonl')}"] [data-testid="open-session"]`);
    await idle();
    const { rows } = await treeRows();
    // Expand a collapsed run below the root so the picture shows entry rows too,
    // and select a branch point after it (its context ends with tool calls).
    const toggles = await page.$$('[data-testid="tree-row"][data-kind="run"][data-branch-point="true"] [data-action="toggle"]');
    await toggles[1]?.click();
    const after = (await treeRows()).rows;
    await clickRow(after.filter((r) => r.branchPoint && !r.current)[2].id);
    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'explorer.png') });
    await page.click('[data-testid="tab-provider"]');
    await page.selectOption('[data-testid="provider-select"]', 'openai');
    await page.screenshot({ path: join(ARTIFACTS, 'explorer-provider.png') });
    assert.deepEqual(pageErrors, [], 'no uncaught errors in the page');
  });
});
