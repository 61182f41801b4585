// A child process for tests/js/limits.test.mjs: `node limits-child.mjs <op>
// <path> [optsJson]` runs one read and prints one JSON line per call,
// `{op, code, maxRssKiB}` (`code` null on success), so that the parent can
// check the error and the peak memory of the whole process.
import { createRequire } from 'node:module';
import { openAsBlob, readFileSync } from 'node:fs';
import { basename, join, dirname } from 'node:path';
import { tmpdir } from 'node:os';

const require = createRequire(import.meta.url);
const [op, path, optsJson] = process.argv.slice(2);
const opts = optsJson ? JSON.parse(optsJson) : undefined;

async function run(name, f) {
  let code = null;
  let message = null;
  let path = null;
  try {
    await f();
  } catch (e) {
    code = e?.code ?? 'NOT_A_FORKPOINT_ERROR';
    message = String(e?.message);
    path = e?.path ?? null;
  }
  process.stdout.write(`${JSON.stringify({ op: name, code, message, path, maxRssKiB: process.resourceUsage().maxRSS })}\n`);
}

const out = () => join(tmpdir(), `fp-limits-${process.pid}-${Math.random().toString(36).slice(2)}.jsonl`);

if (['store', 'web-import', 'web-open', 'store-blob', 'web-import-blob', 'web-blob', 'store-file', 'web-import-file', 'web-file'].includes(op)) {
  await import('fake-indexeddb/auto');
  const web = await import('forkpoint-web');
  if (op.endsWith('blob') || op.endsWith('file')) {
    // The file as a Blob read only when sliced (Node's openAsBlob): a size
    // check must come before any read. As a File, it has a name (its
    // errors' path).
    const lazy = await openAsBlob(path);
    const blob = op.endsWith('file') ? new File([lazy], basename(path)) : lazy;
    if (op.startsWith('store')) {
      const store = await web.IndexedDbStore.open(`limits-${process.pid}`);
      await run('store.importSession (Blob)', () => store.importSession(blob, opts));
    } else if (op.startsWith('web-import')) {
      await run('importSession (web, Blob)', () => web.importSession(blob, opts));
    } else {
      await run('Session.fromBlob (web)', () => web.Session.fromBlob(blob, opts));
    }
    process.exit(0);
  }
  const bytes = new Uint8Array(readFileSync(path));
  if (op === 'store') {
    const store = await web.IndexedDbStore.open(`limits-${process.pid}`);
    await run('store.importSession', () => store.importSession(bytes, opts));
  } else if (op === 'web-import') {
    await run('importSession (web)', () => web.importSession(bytes, opts));
  } else {
    await run('Session.fromJsonl (web)', () => web.Session.fromJsonl(bytes, opts));
  }
} else {
  const fp = require('forkpoint');
  const calls = {
    open: () => fp.SessionLoader.open(path, opts),
    lazy: () => fp.loadSessionLazy(path, opts),
    list: async () => {
      const list = await fp.listSessions(dirname(path), opts);
      const mine = list.find((i) => i.path === path);
      if (!mine) throw Object.assign(new Error('not listed'), { code: 'NOT_LISTED' });
      if (mine.error) throw mine.error;
      for (const i of list) if (i.path !== path && i.error) throw Object.assign(new Error(`${i.path}: ${i.error.message}`), { code: 'OTHER_FAILED' });
    },
    import: () => fp.importSession(path, { ...opts, to: out() }),
    // With progress the file is read by the TypeScript layer: still refused before a byte of it.
    'import-progress': () =>
      fp.importSession(path, {
        ...opts,
        to: out(),
        onProgress: (p) => {
          if (p.phase === 'read') throw Object.assign(new Error('read before the limit was checked'), { code: 'READ_FIRST' });
        },
      }),
    writer: () => fp.SessionWriter.open(path, opts),
    incremental: () => new fp.IncrementalSessionLoader(path, 10, opts).loadNextBatch(),
    migrate: () => fp.SessionMigrator.migrate(path, 'anthropic', 'openai', out()),
    eventlog: () => fp.EventLog.open(path, { readOnly: true }),
  };
  for (const name of op.split(',')) await run(name, calls[name]);
}
