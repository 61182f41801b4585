// The `forkpoint` command as a new user meets it: --version, --help, import
// (stable ids), migrate, explore, and errors as `CODE: message (path:line:offset)`
// with the exit codes the README lists. Every test spawns the real CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { napi, realDir, fixture } from './helpers.mjs';

const require = createRequire(import.meta.url);
const bin = fileURLToPath(new URL('../../npm/forkpoint/bin/forkpoint.mjs', import.meta.url));
const napiDir = fileURLToPath(new URL('../../npm/forkpoint', import.meta.url));
const pkgDir = fileURLToPath(new URL('../../npm/forkpoint/', import.meta.url));
const CC = join(realDir, 'marot-spotter_tool_heavy.jsonl');
const CC_ID = 'd6e0bada-1959-4eec-a9d2-0bfade768d8f';

const tmp = () => mkdtempSync(join(tmpdir(), 'fp-cli-cmd-'));
const run = (cwd, ...args) => {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('--version and -V print the package version; --help lists every command', () => {
  const version = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
  for (const flag of ['--version', '-V']) {
    const r = run(tmp(), flag);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, `${version}\n`);
  }
  const h = run(tmp(), '--help');
  assert.equal(h.code, 0, h.err);
  for (const c of ['list', 'show', 'checkpoint', 'events', 'fork', 'export', 'migrate-store', 'inspect', 'import', 'migrate', 'explore']) {
    assert.match(h.out, new RegExp(`^  ${c}\\b`, 'm'), `--help lists ${c}`);
  }
  assert.match(h.out, /--version/);
  const hi = run(tmp(), 'import', '--help');
  assert.equal(hi.code, 0);
  for (const o of ['--out', '--dir', '--format', '--copy', '--overwrite', '--json']) assert.ok(hi.out.includes(o), o);
});

test('usage errors exit 2 with the help; other errors exit 1 with CODE: message (where)', () => {
  const dir = tmp();
  const u = run(dir, 'frobnicate');
  assert.equal(u.code, 2);
  assert.match(u.err, /^error: unknown command 'frobnicate'/);
  assert.match(u.err, /Usage: forkpoint/);
  assert.equal(run(dir, 'import').code, 2);
  const m = run(dir, 'migrate', CC, '--to', 'nope');
  assert.equal(m.code, 2);
  assert.match(m.err, /Allowed choices are anthropic, openai, openai-responses, google/);
  assert.equal(run(dir, 'explore', '--port', 'x').code, 2);
  // A missing file: NOT_FOUND with the path, never Node's `ENOENT: ENOENT: …`.
  for (const cmd of [['inspect'], ['import'], ['migrate', '--to', 'openai'], ['explore']]) {
    const r = run(dir, cmd[0], join(dir, 'nope.jsonl'), ...cmd.slice(1));
    assert.equal(r.code, 1, `${cmd[0]}: ${r.err}`);
    assert.match(r.err, new RegExp(`^forkpoint: NOT_FOUND: .+ \\(${esc(join(dir, 'nope.jsonl'))}\\)\n$`), `${cmd[0]}: ${r.err}`);
    assert.doesNotMatch(r.err, /ENOENT/);
  }
  // A Claude Code file given to inspect points at `forkpoint import`.
  const i = run(dir, 'inspect', CC);
  assert.equal(i.code, 1);
  assert.match(i.err, new RegExp(`^forkpoint: UNSUPPORTED_FORMAT: .*Claude Code transcript \\(import it with \`forkpoint import <file>\`.* \\(${esc(CC)}:1:0\\)\n$`));
  assert.equal(readdirSync(dir).length, 0, 'nothing written');
});

test('import: a Claude Code file gets its own session id; again is ALREADY_EXISTS (exit 1, with a hint); --copy is a new id', async () => {
  const dir = tmp();
  const r = run(dir, 'import', CC);
  assert.equal(r.code, 0, r.err);
  const path = join(dir, 'marot-spotter_tool_heavy.forkpoint.jsonl');
  assert.match(r.out, new RegExp(`^Imported ${esc(CC)} \\(claude-code\\) as session ${CC_ID}\n  file {8}marot-spotter_tool_heavy\\.forkpoint\\.jsonl\n  entries {5}34 \\(17 messages, 17 kept as custom entries\\)\n`));
  const s = await napi.SessionLoader.open(path);
  assert.equal(s.getMetadata().sessionId, CC_ID);
  assert.equal(s.getMetadata().entryCount, 34);
  const before = readFileSync(path);

  const again = run(dir, 'import', CC);
  assert.equal(again.code, 1);
  assert.match(again.err, new RegExp(`^forkpoint: ALREADY_EXISTS: .+ \\(marot-spotter_tool_heavy\\.forkpoint\\.jsonl\\)\n  hint: imported before: --copy .+ --overwrite .+\n$`));
  assert.deepEqual(readFileSync(path), before, 'the first import is untouched');

  // The same source gzipped, into another folder: the same id.
  const gz = join(dir, 'again.jsonl.gz');
  writeFileSync(gz, gzipSync(readFileSync(CC)));
  const other = join(dir, 'other');
  mkdirSync(other);
  const j = run(dir, 'import', gz, '--dir', other, '--json');
  assert.equal(j.code, 0, j.err);
  const { path: p2, summary } = JSON.parse(j.out);
  assert.equal(p2, join(other, 'again.forkpoint.jsonl'));
  assert.equal(summary.sessionId, CC_ID);
  assert.equal(summary.format, 'claude-code');
  assert.equal((await napi.SessionLoader.open(p2)).getMetadata().sessionId, CC_ID);

  // --copy: a new random id and a file of its own; twice gives two copies.
  const ids = new Set();
  for (let k = 0; k < 2; k++) {
    const c = run(dir, 'import', CC, '--copy', '--json');
    assert.equal(c.code, 0, c.err);
    const { path: cp, summary: cs } = JSON.parse(c.out);
    assert.notEqual(cs.sessionId, CC_ID);
    assert.match(cp, new RegExp(`marot-spotter_tool_heavy\\.copy-${cs.sessionId.slice(0, 8)}\\.forkpoint\\.jsonl$`));
    assert.equal((await napi.SessionLoader.open(join(dir, cp))).getMetadata().sessionId, cs.sessionId);
    ids.add(cs.sessionId);
  }
  assert.equal(ids.size, 2);
  // --overwrite replaces the file, with the same id.
  const o = run(dir, 'import', CC, '--overwrite', '--json');
  assert.equal(o.code, 0, o.err);
  assert.equal(JSON.parse(o.out).summary.sessionId, CC_ID);
});

test('import: a pi file keeps its id and --out names the file; a session imported by 0.1.0 (random id) still opens', async () => {
  const dir = tmp();
  const out = join(dir, 'basic.jsonl');
  const r = run(dir, 'import', fixture('v1-legacy.jsonl'), '--out', out, '--json');
  assert.equal(r.code, 0, r.err);
  const { summary } = JSON.parse(r.out);
  assert.equal(summary.format, 'pi');
  const s = await napi.SessionLoader.open(out);
  assert.equal(s.getMetadata().version, 3);
  assert.equal(summary.sessionId, s.getMetadata().sessionId);
  assert.equal(run(dir, 'import', fixture('v1-legacy.jsonl'), '--out', out).code, 1);
  // The file 0.1.0 wrote for the same Claude Code session, under a random id.
  const old = join(realDir, 'marot-spotter_tool_heavy.forkpoint.jsonl');
  const i = run(dir, 'inspect', old, '--json');
  assert.equal(i.code, 0, i.err);
  assert.equal(JSON.parse(i.out).metadata.sessionId, 'f6634f6b-bead-4574-8809-f2e735e4a199');
});

test('import: a damaged Claude Code file is CORRUPTED_DATA at path:line:offset; nothing is written', () => {
  const dir = tmp();
  const lines = readFileSync(CC, 'utf8').split('\n').slice(0, 6);
  const offset = lines.slice(0, 4).join('\n').length + 1; // the start of line 5
  lines[4] = lines[4].slice(0, 40);
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(bad, lines.join('\n') + '\n');
  const r = run(dir, 'import', bad);
  assert.equal(r.code, 1);
  assert.match(r.err, new RegExp(`^forkpoint: CORRUPTED_DATA: line 5 is not valid JSON: .+ \\(${esc(bad)}:5:${offset}\\)\n$`));
  assert.deepEqual(readdirSync(dir), ['bad.jsonl']);
});

test('migrate: a pi session for another provider; a Claude Code file is UNSUPPORTED_FORMAT; an existing target ALREADY_EXISTS', async () => {
  const dir = tmp();
  const src = join(realDir, 'badlogic-pi-mono_large-session.jsonl');
  const r = run(dir, 'migrate', src, '--to', 'google', '--json');
  assert.equal(r.code, 0, r.err);
  const res = JSON.parse(r.out);
  assert.equal(res.path, 'badlogic-pi-mono_large-session.google.jsonl');
  assert.equal(res.report.compatible, false);
  assert.ok(res.report.lossyFields.includes('thinkingSignature'));
  assert.ok(res.messagesChanged > 0);
  const s = await napi.SessionLoader.open(join(dir, res.path));
  assert.equal(s.getMetadata().entryCount, (await napi.SessionLoader.open(src)).getMetadata().entryCount);
  const again = run(dir, 'migrate', src, '--to', 'google');
  assert.equal(again.code, 1);
  assert.match(again.err, /^forkpoint: ALREADY_EXISTS: .+\(badlogic-pi-mono_large-session\.google\.jsonl\)\n  hint: /);
  const text = run(dir, 'migrate', src, '--to', 'openai', '--out', join(dir, 'o.jsonl'));
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, /^Migrated .+ for openai → .+o\.jsonl\n  messages changed {2}\d+, tool-call ids renamed \d+\n/);
  // Not a pi session: refused, nothing written.
  const cc = run(dir, 'migrate', CC, '--to', 'openai');
  assert.equal(cc.code, 1);
  assert.match(cc.err, new RegExp(`^forkpoint: UNSUPPORTED_FORMAT: not a pi session: this looks like a Claude Code transcript .+ \\(${esc(CC)}:1\\)\n$`));
  assert.ok(!existsSync(join(dir, 'marot-spotter_tool_heavy.openai.jsonl')));
});

test('import and migrate show progress on a terminal (a pty through script(1))', (t) => {
  if (spawnSync('script', ['--version']).status !== 0) return t.skip('script(1) is not installed');
  const dir = tmp();
  const r = spawnSync('script', ['-qfec', `${process.execPath} ${bin} import ${CC} --dir ${dir}`, '/dev/null'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout);
  assert.match(r.stdout, /importing .*\d+% /);
  assert.match(r.stdout, /Imported .+ as session/);
  const m = spawnSync('script', ['-qfec', `${process.execPath} ${bin} migrate ${join(realDir, 'badlogic-pi-mono_large-session.jsonl')} --to openai --out ${join(dir, 'm.jsonl')}`, '/dev/null'], { encoding: 'utf8' });
  assert.equal(m.status, 0, m.stdout);
  assert.match(m.stdout, /migrating .*100% /);
});

/** Starts `forkpoint explore …` and resolves its URL once it prints it. */
function explore(cwd, ...args) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [bin, 'explore', '--port', '0', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    let err = '';
    p.stderr.on('data', (d) => (err += d));
    p.stdout.on('data', (d) => {
      text += d;
      const m = /forkpoint session explorer: (\S+)/.exec(text);
      if (m) resolve({ url: m[1], proc: p });
    });
    p.on('exit', (code) => reject(new Error(`explore exited ${code}: ${err}`)));
  });
}

const stop = (proc) =>
  new Promise((resolve) => {
    proc.removeAllListeners('exit');
    proc.on('exit', resolve);
    proc.kill('SIGTERM');
  });

test('explore: serves the installed forkpoint-web on 127.0.0.1 (page, library with its wasm and shared layer) and the file given', async () => {
  const dir = tmp();
  const { url, proc } = await explore(dir, CC);
  try {
    const u = new URL(url);
    assert.equal(u.hostname, '127.0.0.1');
    assert.equal(u.pathname, '/explorer/');
    const open = u.searchParams.get('open');
    assert.equal(open, '/_open/marot-spotter_tool_heavy.jsonl');
    const get = (path) => fetch(new URL(path, u.origin), { redirect: 'manual' });
    assert.equal((await get('/')).headers.get('location'), '/explorer/');
    const page = await (await get('/explorer/')).text();
    assert.match(page, /<script type="module" src="main.js"><\/script>/);
    // The page imports only forkpoint-web's own files (the shared layer and
    // the wasm are inside its dist and pkg).
    for (const [path, type, has] of [
      ['/explorer/main.js', 'text/javascript', /dist\/web\.js/],
      ['/dist/web.js', 'text/javascript', /init/],
      ['/dist/shared/index.js', 'text/javascript', /ForkpointError/],
      ['/pkg/web/forkpoint_wasm_bg.inline.js', 'text/javascript', /./],
    ]) {
      const r = await get(path);
      assert.equal(r.status, 200, path);
      assert.ok(r.headers.get('content-type').startsWith(type), path);
      assert.match(await r.text(), has, path);
    }
    assert.deepEqual(Buffer.from(await (await get(open)).arrayBuffer()), readFileSync(CC));
    // Nothing outside the package: no parent folders, dot-files or node_modules
    // (sent as written: fetch would resolve the dots).
    const raw = (path) => new Promise((ok, fail) => http.get({ host: '127.0.0.1', port: u.port, path }, (res) => ok(res.resume().statusCode)).on('error', fail));
    for (const path of ['/..%2f..%2fpackage.json', '/explorer/..%2f..%2f..%2fpackage.json', '/.gitignore', '/node_modules/x', '/_open/other.jsonl', '/dist/..%2f..%2fpackage.json']) {
      assert.ok([403, 404].includes(await raw(path)), path);
    }
    assert.equal(await raw('/explorer/index.html'), 200);
  } finally {
    await stop(proc);
  }
});

test('explore: the files come from wherever forkpoint-web is installed; without it, NOT_FOUND names what to install', async () => {
  const { findExplorer, serveExplorer } = require('../../npm/forkpoint/dist/explore.js');
  const webDir = fileURLToPath(new URL('../../wasm/', import.meta.url));
  // An install outside the repository: node_modules/forkpoint-web alone (it is self-contained).
  const root = tmp();
  const nm = join(root, 'node_modules');
  for (const part of ['package.json', 'explorer', 'dist', 'pkg/web']) cpSync(join(webDir, part), join(nm, 'forkpoint-web', part), { recursive: true });
  const files = findExplorer(join(root, 'app.js'));
  assert.equal(files.web, join(nm, 'forkpoint-web'));
  const server = await serveExplorer({ files, port: 0 });
  try {
    assert.equal(server.url, `${server.origin}/explorer/`);
    assert.equal((await fetch(`${server.origin}/explorer/`)).status, 200);
    assert.equal((await fetch(`${server.origin}/dist/shared/index.js`)).status, 200);
  } finally {
    await server.close();
  }
  // Not installed.
  const none = tmp();
  assert.throws(() => findExplorer(join(none, 'app.js')), (e) => e.code === 'NOT_FOUND' && /npm install forkpoint-web/.test(e.message));
  // Installed without its explorer.
  cpSync(join(webDir, 'package.json'), join(none, 'node_modules/forkpoint-web/package.json'));
  cpSync(join(webDir, 'dist'), join(none, 'node_modules/forkpoint-web/dist'), { recursive: true });
  assert.throws(() => findExplorer(join(none, 'app.js')), (e) => e.code === 'NOT_FOUND' && /no explorer\/index\.html/.test(e.message));
});

test('import of a FIFO or a folder is INVALID_INPUT at once (it never waits for a writer)', () => {
  const dir = tmp();
  const fifo = join(dir, 'pipe.jsonl');
  if (spawnSync('mkfifo', [fifo]).status !== 0) return;
  for (const target of [fifo, dir]) {
    const r = spawnSync(process.execPath, [bin, 'import', target, '--dir', dir], { cwd: dir, encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.signal, null, `${target}: it did not hang`);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^forkpoint: INVALID_INPUT: is (not a regular file \(a FIFO, socket or device\)|a directory), not a session file \(/);
  }
  // And through the library, with progress (the path that reads in JavaScript).
  const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(napiDir)}).importSession(${JSON.stringify(fifo)}, { to: ${JSON.stringify(join(dir, 'x.jsonl'))}, onProgress() {} }).then(() => process.exit(3), (e) => { console.log(e.code); process.exit(0); })`], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(r.signal, null);
  assert.equal(r.stdout.trim(), 'INVALID_INPUT');
});
