// Reading is bounded (issue 12, items 3 and 4): a gzip bomb stops with
// LIMIT_EXCEEDED early, with the peak memory of the process bounded by the
// limits and not by what the bomb expands to; a FIFO or a device is refused
// with INVALID_INPUT at once instead of blocking or being read forever. Each
// read runs in a child process (tests/js/limits-child.mjs) that reports its
// peak RSS; a child that does not exit on its own within 30 s is killed and
// the test fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, openSync, writeSync, closeSync, writeFileSync, existsSync, truncateSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const child = fileURLToPath(new URL('./limits-child.mjs', import.meta.url));
const MiB = 1 << 20;
/** Peak RSS allowed to a child reading a bomb (the old code needed gigabytes). */
const RSS_BOUND_KIB = 600 * 1024;

const HEADER = '{"type":"session","version":3,"id":"bomb-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n';
const LINE = `{"type":"custom","customType":"x","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","data":"${'x'.repeat(400)}"}\n`;

/**
 * A gzip file of `mib` MiB of text (about 1000:1): the header, then the same
 * 1 MiB gzip member (`lines` of session entries, or one long line without a
 * newline) written `mib` times — a few KB per GB, built without holding it.
 */
function bomb(path, mib, { oneLine = false } = {}) {
  const chunk = oneLine ? Buffer.alloc(MiB, 'x') : Buffer.from(LINE.repeat(Math.floor(MiB / LINE.length)));
  const member = gzipSync(chunk, { level: 9 });
  const fd = openSync(path, 'w');
  writeSync(fd, gzipSync(HEADER));
  for (let i = 0; i < mib; i++) writeSync(fd, member);
  closeSync(fd);
  return path;
}

/** Runs the child; resolves its JSON lines. */
function runChild(op, path, opts) {
  const args = [child, op, path, ...(opts ? [JSON.stringify(opts)] : [])];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { timeout: 30_000, killSignal: 'SIGKILL', maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err?.killed) return reject(new Error(`${op} on ${path}: the child did not exit within 30 s (blocked or reading forever)`));
      if (err) return reject(new Error(`${op} on ${path}: child failed: ${err.message}\n${stderr}`));
      resolve(stdout.trim().split('\n').map((l) => JSON.parse(l)));
    });
  });
}

async function expectBounded(op, path, opts, code, option) {
  const [r] = await runChild(op, path, opts);
  assert.equal(r.code, code, `${op}: ${r.message}`);
  if (option) assert.match(r.message, new RegExp(option), op);
  assert.ok(r.maxRssKiB < RSS_BOUND_KIB, `${op}: peak RSS ${Math.round(r.maxRssKiB / 1024)} MiB`);
  return r;
}

const dir = mkdtempSync(join(tmpdir(), 'fp-limits-'));
// 2 GiB of text in about 3 MB.
const big = bomb(join(dir, 'bomb.jsonl.gz'), 2048);
// A normal session beside it, which listing must still list.
writeFileSync(join(dir, 'ok.jsonl'), HEADER);

test('a gzip bomb: SessionLoader.open, loadSessionLazy, listSessions, importSession stop with LIMIT_EXCEEDED in bounded memory', async () => {
  await expectBounded('open', big, undefined, 'LIMIT_EXCEEDED', 'maxCompressionRatio');
  await expectBounded('lazy', big, undefined, 'LIMIT_EXCEEDED', 'maxCompressionRatio');
  await expectBounded('list', big, undefined, 'LIMIT_EXCEEDED', 'maxCompressionRatio');
  await expectBounded('import', big, undefined, 'LIMIT_EXCEEDED', 'maxCompressionRatio');
});

test('each limit is an option: maxDecompressedBytes, maxLineBytes, maxEntries (ratio check off)', async () => {
  await expectBounded('open', big, { maxCompressionRatio: 0, maxDecompressedBytes: 64 * MiB }, 'LIMIT_EXCEEDED', 'maxDecompressedBytes');
  await expectBounded('list', big, { maxCompressionRatio: 0, maxDecompressedBytes: 64 * MiB }, 'LIMIT_EXCEEDED', 'maxDecompressedBytes');
  await expectBounded('import', big, { maxCompressionRatio: 0, maxEntries: 100_000 }, 'LIMIT_EXCEEDED', 'maxEntries');
  await expectBounded('lazy', big, { maxCompressionRatio: 0, maxEntries: 100_000 }, 'LIMIT_EXCEEDED', 'maxEntries');
  // One line of 1 GiB: refused once it passes maxLineBytes, without holding it.
  const line = bomb(join(mkdtempSync(join(tmpdir(), 'fp-limits-')), 'line.jsonl.gz'), 1024, { oneLine: true });
  await expectBounded('open', line, { maxCompressionRatio: 0, maxLineBytes: 32 * MiB }, 'LIMIT_EXCEEDED', 'maxLineBytes');
  await expectBounded('list', line, { maxCompressionRatio: 0, maxLineBytes: 32 * MiB }, 'LIMIT_EXCEEDED', 'maxLineBytes');
});

test('raised limits let a highly compressible file load', async () => {
  const small = bomb(join(mkdtempSync(join(tmpdir(), 'fp-limits-')), 'small.jsonl.gz'), 24);
  await expectBounded('open', small, undefined, 'LIMIT_EXCEEDED', 'maxCompressionRatio');
  await expectBounded('open', small, { maxCompressionRatio: 0 }, null);
  await expectBounded('list', small, { maxCompressionRatio: 0 }, null);
  await expectBounded('import', small, { maxCompressionRatio: 0 }, null);
});

test('browser build: IndexedDB store import, importSession and Session.fromJsonl of a bomb are LIMIT_EXCEEDED, not out of memory', async () => {
  await expectBounded('store', big, undefined, 'LIMIT_EXCEEDED', 'maxCompressionRatio');
  await expectBounded('store', big, { maxCompressionRatio: 0, maxDecompressedBytes: 64 * MiB }, 'LIMIT_EXCEEDED', 'maxDecompressedBytes');
  await expectBounded('web-import', big, undefined, 'LIMIT_EXCEEDED', 'maxCompressionRatio');
  await expectBounded('web-open', big, undefined, 'LIMIT_EXCEEDED', 'maxCompressionRatio');
});

test('maxFileBytes: a 5 GiB file is refused before it is read (default 4 GiB); a lower limit refuses a small file in the addon and the browser build', async () => {
  // Sparse: 5 GiB long, a few KB on disk; reading it would take seconds and 5 GB.
  // (Not as a Blob: Node's openAsBlob gives at most 1 GiB of a file.)
  const huge = join(mkdtempSync(join(tmpdir(), 'fp-limits-')), 'huge.jsonl');
  writeFileSync(huge, HEADER);
  truncateSync(huge, 5 * 1024 * MiB);
  for (const op of ['open', 'import', 'import-progress']) {
    const r = await expectBounded(op, huge, undefined, 'LIMIT_EXCEEDED', 'maxFileBytes');
    assert.match(r.message, /5368709120 bytes/, op);
  }
  // The gzip bomb is 3 MB on disk: under a 1 MiB limit, refused as a file.
  for (const op of ['open', 'lazy', 'import', 'import-progress', 'web-open', 'web-import', 'store', 'web-blob', 'store-blob', 'web-import-blob']) {
    await expectBounded(op, big, { maxFileBytes: MiB }, 'LIMIT_EXCEEDED', 'maxFileBytes');
  }
  // A File's name is the error's path (a Blob has none).
  for (const op of ['web-file', 'store-file', 'web-import-file']) {
    const r = await expectBounded(op, big, { maxFileBytes: MiB }, 'LIMIT_EXCEEDED', 'maxFileBytes');
    assert.equal(r.path, basename(big), op);
  }
  // At the limit exactly, a file loads.
  const ok = join(dir, 'ok.jsonl');
  await expectBounded('open', ok, { maxFileBytes: Buffer.byteLength(HEADER) }, null);
  await expectBounded('web-blob', ok, { maxFileBytes: Buffer.byteLength(HEADER) }, null);
  await expectBounded('open', ok, { maxFileBytes: Buffer.byteLength(HEADER) - 1 }, 'LIMIT_EXCEEDED', 'maxFileBytes');
});

const everyRead = 'open,lazy,import,writer,incremental,migrate,eventlog';

test('a FIFO named *.jsonl is refused at once everywhere, and listed with an error', async () => {
  const d = mkdtempSync(join(tmpdir(), 'fp-fifo-'));
  const fifo = join(d, 'pipe.jsonl');
  execFileSync('mkfifo', [fifo]);
  writeFileSync(join(d, 'ok.jsonl'), HEADER);
  for (const r of await runChild(`${everyRead},list`, fifo)) {
    assert.equal(r.code, 'INVALID_INPUT', `${r.op}: ${r.message}`);
  }
});

test('/dev/zero and /dev/urandom are refused, not read forever', async () => {
  for (const dev of ['/dev/zero', '/dev/urandom']) {
    if (!existsSync(dev)) continue;
    for (const r of await runChild(everyRead, dev)) {
      assert.equal(r.code, 'INVALID_INPUT', `${r.op} on ${dev}: ${r.message}`);
      assert.ok(r.maxRssKiB < RSS_BOUND_KIB, `${r.op} on ${dev}: peak RSS ${Math.round(r.maxRssKiB / 1024)} MiB`);
    }
  }
});
