// The packages as a user gets them: `npm pack` the public packages into a
// temporary folder, install only those tarballs into fresh projects outside the
// repository, and build and run them there — a CommonJS and an ES-module
// TypeScript program (plus a `moduleResolution: bundler` type check) running an
// agent in Node; a browser app built by Vite (build and dev server), esbuild and
// webpack 5 with no configuration, run in Chromium; the session explorer shipped
// in the tarball. Also: @arethetypeswrong/cli on each tarball, and what each
// tarball holds. Nothing here resolves a workspace package: the projects see
// only their own node_modules. The bundlers, TypeScript and attw are the
// workspace's pinned dev dependencies, run from its node_modules against the
// project (no download per run, the versions the lock file names).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../../scripts/explorer.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from '../browser/chromium.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const APPS = fileURLToPath(new URL('./apps/', import.meta.url));
const BIN = join(ROOT, 'node_modules/.bin');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const TYPES_NODE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).devDependencies['@types/node'];
const PUBLIC = ['forkpoint', 'forkpoint-web'];

const tmp = mkdtempSync(join(tmpdir(), 'forkpoint-pack-'));
/** package name → absolute path of its tarball */
const tarballs = {};
/** package name → the file list `npm pack --json` reported */
const packed = {};

// The npm run that started `npm test` exports npm_* variables (its prefix among
// them); a nested npm must see none of them, or it would act on the repository.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) || /^npm_config_cache$/i.test(k)));

/** Runs a command; fails the test with its output if it exits non-zero. */
function run(cmd, args, cwd, opts = {}) {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20, timeout: 180_000, ...opts });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited with ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
  }
  return r.stdout;
}

/** A fresh project in the temporary folder with only the tarballs (and `extra` registry packages) installed. */
function project(name, pkg, deps, extra = []) {
  const dir = join(tmp, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `app-${name}`, version: '1.0.0', private: true, ...pkg }, null, 2));
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--no-package-lock', '--loglevel=error', ...deps.map((d) => tarballs[d]), ...extra], dir);
  return dir;
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

let browser;
/** Opens `url` in a fresh browser context; resolves to the app's `window.__result` (page errors fail). */
async function runPage(url) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(url);
    await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 60_000 });
    const r = await page.evaluate(() => window.__result);
    assert.equal(r.failed, undefined, r.failed);
    assert.deepEqual(errors, [], `errors in ${url}`);
    return r;
  } finally {
    await context.close();
  }
}

/** What tests/package/apps/web/app.js reports when everything worked. */
const EXPECTED_WEB = { context: ['user', 'assistant'], error: 'UNSUPPORTED_FORMAT', stored: 2, status: 'ok', text: 'sum=5' };

/** Serves `dir` and runs the app there with and without `await init()`. */
async function runWebApp(dir, page = 'index.html') {
  const server = await startServer({ root: dir });
  try {
    for (const query of ['', '?init']) assert.deepEqual(await runPage(`${server.url}/${page}${query}`), EXPECTED_WEB, `${dir} ${query}`);
  } finally {
    await server.close();
  }
}

const haveChromium = existsSync(CHROMIUM);

before(async () => {
  // prepack (scripts/prepack-check.mjs) refuses a stale build, so this also checks the build is current.
  const out = run('npm', ['pack', '--json', '--pack-destination', tmp, ...PUBLIC.flatMap((p) => ['-w', p])], ROOT);
  for (const p of JSON.parse(out)) {
    tarballs[p.name] = join(tmp, p.filename);
    packed[p.name] = p.files.map((f) => f.path);
  }
  if (haveChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});

after(async () => {
  await browser?.close();
  rmSync(tmp, { recursive: true, force: true });
});

test('each tarball is publishable as it stands: licensed, documented, no internal dependency', () => {
  for (const name of PUBLIC) {
    const manifest = JSON.parse(run('tar', ['-xzOf', tarballs[name], 'package/package.json'], tmp));
    assert.equal(manifest.private, undefined, `${name} is private`);
    assert.equal(manifest.license, 'MIT', name);
    assert.ok(manifest.repository?.url, `${name} has no repository`);
    assert.ok(manifest.engines?.node, `${name} has no engines`);
    assert.ok(manifest.exports?.['.'] && manifest.types, `${name} has no exports/types`);
    const deps = Object.keys(manifest.dependencies ?? {});
    assert.deepEqual(deps.filter((d) => d.startsWith('@forkpoint/')), [], `${name} depends on an internal package`);
    for (const f of ['README.md', 'LICENSE', 'package.json']) assert.ok(packed[name].includes(f), `${name} has no ${f}`);
  }
  for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/shared/index.js', 'dist/types.d.ts', 'native/index.js', 'bin/forkpoint.mjs']) {
    assert.ok(packed.forkpoint.includes(f), `forkpoint has no ${f}`);
  }
  assert.ok(packed.forkpoint.some((f) => /^native\/forkpoint\..+\.node$/.test(f)), 'forkpoint has no addon');
  for (const f of ['dist/web.js', 'dist/node.js', 'dist/cjs/node-cjs.js', 'dist/api.d.ts', 'dist/cjs/api.d.ts', 'pkg/web/forkpoint_wasm_bg.inline.js', 'pkg/node/forkpoint_wasm_bg.wasm', 'explorer/index.html']) {
    assert.ok(packed['forkpoint-web'].includes(f), `forkpoint-web has no ${f}`);
  }
  // The test builds never ship.
  assert.deepEqual([...packed.forkpoint, ...packed['forkpoint-web']].filter((f) => /contract/.test(f)), []);
});

test('@arethetypeswrong/cli finds no problem in either tarball', () => {
  for (const name of PUBLIC) run(join(BIN, 'attw'), ['--format', 'ascii', tarballs[name]], tmp);
});

const agentOutput = (out) => {
  const r = JSON.parse(out.trim().split('\n').at(-1));
  assert.deepEqual(r, { status: 'ok', text: 'done', sum: 5, messages: 4, webEntries: 1, nativeEntries: 1, code: 'UNSUPPORTED_FORMAT' });
};
const tsconfig = (options) =>
  JSON.stringify({ compilerOptions: { target: 'ES2022', lib: ['ES2022'], strict: true, skipLibCheck: false, types: ['node'], outDir: 'out', ...options }, files: ['agent.ts'] });

test('CommonJS TypeScript (module node16) compiles against both tarballs and runs an agent', () => {
  const dir = project('node-cjs', { type: 'commonjs' }, PUBLIC, [`@types/node@${TYPES_NODE}`]);
  cpSync(join(APPS, 'node/agent.ts'), join(dir, 'agent.ts'));
  writeFileSync(join(dir, 'tsconfig.json'), tsconfig({ module: 'node16', moduleResolution: 'node16' }));
  run(process.execPath, [TSC, '-p', '.'], dir);
  assert.match(readFileSync(join(dir, 'out/agent.js'), 'utf8'), /require\("forkpoint-web"\)/, 'compiled as CommonJS');
  agentOutput(run(process.execPath, ['out/agent.js'], dir));
});

test('ES-module TypeScript (module nodenext; and a moduleResolution bundler check) compiles against both tarballs and runs an agent', () => {
  const dir = project('node-esm', { type: 'module' }, PUBLIC, [`@types/node@${TYPES_NODE}`]);
  cpSync(join(APPS, 'node/agent.ts'), join(dir, 'agent.ts'));
  writeFileSync(join(dir, 'tsconfig.json'), tsconfig({ module: 'nodenext', moduleResolution: 'nodenext' }));
  writeFileSync(join(dir, 'tsconfig.bundler.json'), tsconfig({ module: 'esnext', moduleResolution: 'bundler', noEmit: true }));
  run(process.execPath, [TSC, '-p', '.'], dir);
  run(process.execPath, [TSC, '-p', 'tsconfig.bundler.json'], dir);
  assert.match(readFileSync(join(dir, 'out/agent.js'), 'utf8'), /from 'forkpoint-web'/, 'compiled as an ES module');
  agentOutput(run(process.execPath, ['out/agent.js'], dir));
});

/** A browser project: the app and its page, forkpoint-web from its tarball. */
function webProject(name) {
  const dir = project(name, {}, ['forkpoint-web']);
  cpSync(join(APPS, 'web'), dir, { recursive: true });
  return dir;
}

test('a default Vite app builds and runs in Chromium', { skip: !haveChromium && 'Chromium is not installed' }, async () => {
  const dir = webProject('vite');
  run(process.execPath, [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'error'], dir);
  await runWebApp(join(dir, 'dist'));
});

test("a default Vite app runs on Vite's dev server in Chromium", { skip: !haveChromium && 'Chromium is not installed' }, async () => {
  const dir = webProject('vite-dev');
  const port = await freePort();
  const vite = spawn(process.execPath, [join(ROOT, 'node_modules/vite/bin/vite.js'), '--port', String(port), '--strictPort', '--host', '127.0.0.1'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  vite.stdout.on('data', (d) => (log += d));
  vite.stderr.on('data', (d) => (log += d));
  try {
    await new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`Vite's dev server did not start:\n${log}`)), 60_000);
      vite.once('exit', (code) => reject(new Error(`Vite's dev server exited (${code}):\n${log}`)));
      const check = () => (log.includes(`:${port}`) ? (clearTimeout(t), resolve()) : setTimeout(check, 100));
      check();
    });
    for (const query of ['', '?init']) assert.deepEqual(await runPage(`http://127.0.0.1:${port}/${query}`), EXPECTED_WEB, `${query}\n${log}`);
    assert.doesNotMatch(log, /error/i, log);
  } finally {
    vite.kill();
  }
});

// esbuild's default browser format (iife) refuses a top-level await anywhere in
// the graph, so this also guards the entry against one coming back (Vite 8's
// default target accepts it; older Vite versions and their dev servers did not).
test('an esbuild bundle (no options beyond --bundle) runs in Chromium', { skip: !haveChromium && 'Chromium is not installed' }, async () => {
  const dir = webProject('esbuild');
  run(join(BIN, 'esbuild'), ['app.js', '--bundle', '--outdir=dist', '--log-level=error'], dir);
  cpSync(join(dir, 'index.html'), join(dir, 'dist/index.html'));
  await runWebApp(join(dir, 'dist'));
});

test('a webpack 5 app (zero configuration: src/index.js → dist/main.js) builds and runs in Chromium', { skip: !haveChromium && 'Chromium is not installed' }, async () => {
  const dir = webProject('webpack');
  mkdirSync(join(dir, 'src'));
  cpSync(join(dir, 'app.js'), join(dir, 'src/index.js'));
  // As `webpack --mode production` would run it in the project (webpack-cli is not needed for that).
  const build = `require(${JSON.stringify(join(ROOT, 'node_modules/webpack'))})({ mode: 'production' }, (e, s) => {
    if (e || s.hasErrors()) { console.error(e ?? s.toString('errors-only')); process.exit(1); }
  })`;
  run(process.execPath, ['-e', build], dir);
  writeFileSync(join(dir, 'dist/index.html'), '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script src="main.js"></script>\n');
  await runWebApp(join(dir, 'dist'));
});

test('the session explorer in the tarball starts in Chromium', { skip: !haveChromium && 'Chromium is not installed' }, async () => {
  const dir = project('explorer', {}, ['forkpoint-web']);
  const server = await startServer({ root: join(dir, 'node_modules/forkpoint-web') });
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('response', (r) => r.status() >= 400 && errors.push(`${r.status()} ${r.url()}`));
    await page.goto(`${server.url}/explorer/`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60_000 });
    assert.equal(await page.isVisible('[data-testid=error-banner]'), false, await page.textContent('[data-testid=error-banner]'));
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    await server.close();
  }
});
