// The packages as a user gets them: `npm pack` the public packages into a
// temporary folder, install only those tarballs into fresh projects outside the
// repository, and build and run them there — a CommonJS and an ES-module
// TypeScript program (plus a `moduleResolution: bundler` type check) running an
// agent in Node; a browser app built by Vite (build and dev server), esbuild and
// webpack 5 with no configuration, run in Chromium; the session explorer shipped
// in the tarball. `forkpoint` is installed with this machine's platform package
// (`forkpoint-linux-x64-gnu`, npm/forkpoint/npm/<platform>/, which holds the
// native binary) as npm picks it from the optionalDependencies `napi pre-publish`
// writes at release; without it (or on a platform with no binary),
// `require('forkpoint')` fails with UNSUPPORTED_PLATFORM. Also:
// @arethetypeswrong/cli on each tarball, and what each tarball holds. Nothing
// here resolves a workspace package: the projects see only their own
// node_modules. The bundlers, TypeScript and attw are the
// workspace's pinned dev dependencies, run from its node_modules against the
// project (no download per run, the versions the lock file names).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
/** The platform packages (made by `napi create-npm-dirs`; one is this machine's). */
const PLATFORM_DIRS = readdirSync(join(ROOT, 'npm/forkpoint/npm'));
const libc = () => (process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl');
/** This machine's platform package, as the generated loader names it. */
const HOST_DIR = `${process.platform}-${process.arch}${process.platform === 'linux' ? `-${libc()}` : process.platform === 'win32' ? '-msvc' : ''}`;
const HOST = `forkpoint-${HOST_DIR}`;
/** What a Node project installs: both packages and the binary npm would pick for this machine. */
const NODE_PACKAGES = [...PUBLIC, HOST];

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
  // The platform package is no workspace (npm would refuse the other platforms' ones): packed from its folder.
  const platformDir = join(ROOT, 'npm/forkpoint/npm', HOST_DIR);
  assert.ok(existsSync(platformDir), `no platform package for this machine (${HOST_DIR})`);
  const binary = join(platformDir, `forkpoint.${HOST_DIR}.node`);
  assert.ok(existsSync(binary), `${binary} is missing: run \`bash scripts/build.sh\``);
  const built = statSync(join(ROOT, 'npm/forkpoint/native', `forkpoint.${HOST_DIR}.node`)).mtimeMs;
  assert.ok(statSync(binary).mtimeMs >= built, `${binary} is older than the build in native/: run \`bash scripts/build.sh\``);
  const platformOut = run('npm', ['pack', '--json', '--pack-destination', tmp], platformDir);
  for (const p of [...JSON.parse(out), ...JSON.parse(platformOut)]) {
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
  for (const f of ['native/index.js', 'native/index.d.ts', 'native/binding.js', 'native/binding.d.ts']) assert.ok(packed.forkpoint.includes(f), `forkpoint has no ${f}`);
  // The binaries are in the platform packages only.
  assert.deepEqual(packed.forkpoint.filter((f) => f.endsWith('.node')), []);
  const platform = JSON.parse(run('tar', ['-xzOf', tarballs[HOST], 'package/package.json'], tmp));
  assert.equal(platform.version, JSON.parse(readFileSync(join(ROOT, 'npm/forkpoint/package.json'), 'utf8')).version);
  assert.equal(platform.license, 'MIT');
  assert.ok(platform.repository?.url && platform.engines?.node, HOST);
  assert.deepEqual([platform.os, platform.cpu], [[process.platform], [process.arch]]);
  assert.equal(platform.main, `forkpoint.${HOST_DIR}.node`);
  assert.deepEqual(packed[HOST].toSorted(), ['LICENSE', 'README.md', `forkpoint.${HOST_DIR}.node`, 'package.json']);
  // Every platform package is publishable as committed (napi create-npm-dirs), its binary aside.
  for (const dir of PLATFORM_DIRS) {
    const m = JSON.parse(readFileSync(join(ROOT, 'npm/forkpoint/npm', dir, 'package.json'), 'utf8'));
    assert.equal(m.name, `forkpoint-${dir}`);
    assert.deepEqual(m.files, [`forkpoint.${dir}.node`], dir);
    assert.ok(m.os?.length === 1 && m.cpu?.length === 1 && m.license === 'MIT', dir);
    for (const f of ['LICENSE', 'README.md']) assert.ok(existsSync(join(ROOT, 'npm/forkpoint/npm', dir, f)), `${dir} has no ${f}`);
  }
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
  const dir = project('node-cjs', { type: 'commonjs' }, NODE_PACKAGES, [`@types/node@${TYPES_NODE}`]);
  cpSync(join(APPS, 'node/agent.ts'), join(dir, 'agent.ts'));
  writeFileSync(join(dir, 'tsconfig.json'), tsconfig({ module: 'node16', moduleResolution: 'node16' }));
  run(process.execPath, [TSC, '-p', '.'], dir);
  assert.match(readFileSync(join(dir, 'out/agent.js'), 'utf8'), /require\("forkpoint-web"\)/, 'compiled as CommonJS');
  agentOutput(run(process.execPath, ['out/agent.js'], dir));
});

test('ES-module TypeScript (module nodenext; and a moduleResolution bundler check) compiles against both tarballs and runs an agent', () => {
  const dir = project('node-esm', { type: 'module' }, NODE_PACKAGES, [`@types/node@${TYPES_NODE}`]);
  cpSync(join(APPS, 'node/agent.ts'), join(dir, 'agent.ts'));
  writeFileSync(join(dir, 'tsconfig.json'), tsconfig({ module: 'nodenext', moduleResolution: 'nodenext' }));
  writeFileSync(join(dir, 'tsconfig.bundler.json'), tsconfig({ module: 'esnext', moduleResolution: 'bundler', noEmit: true }));
  run(process.execPath, [TSC, '-p', '.'], dir);
  run(process.execPath, [TSC, '-p', 'tsconfig.bundler.json'], dir);
  assert.match(readFileSync(join(dir, 'out/agent.js'), 'utf8'), /from 'forkpoint-web'/, 'compiled as an ES module');
  agentOutput(run(process.execPath, ['out/agent.js'], dir));
});

// What `require('forkpoint')` and `import('forkpoint')` do in a project, and
// whether forkpoint-web's ForkpointError recognizes the error (both packages'
// errors share one brand). Printed as one JSON line.
const LOAD_CHECK = `
const { ForkpointError } = require('forkpoint-web');
const out = {};
const info = (e) => ({ name: e.name, code: e.code, message: e.message, forkpointError: e instanceof ForkpointError, cause: e.cause instanceof Error });
try {
  out.exports = Object.keys(require('forkpoint')).length > 0;
} catch (e) {
  out.require = info(e);
}
import('forkpoint').then(() => (out.imported = true), (e) => (out.import = info(e))).finally(() => console.log(JSON.stringify(out)));
`;
/** Runs LOAD_CHECK in `dir` (`node` arguments before it: `pre`). */
function loadCheck(dir, pre = []) {
  writeFileSync(join(dir, 'load-check.cjs'), LOAD_CHECK);
  return JSON.parse(run(process.execPath, [...pre, 'load-check.cjs'], dir).trim().split('\n').at(-1));
}
const VERSION = JSON.parse(readFileSync(join(ROOT, 'npm/forkpoint/package.json'), 'utf8')).version;

test('without its platform package, require and import of forkpoint fail with ForkpointError UNSUPPORTED_PLATFORM naming the package to install; the CLI says so without a stack; with the package (but a broken binary) the error gives the reason; with a sound one it loads', () => {
  const dir = project('no-binary', { type: 'commonjs' }, PUBLIC);
  const r = loadCheck(dir);
  assert.equal(r.exports, undefined, 'forkpoint loaded without a binary');
  assert.equal(r.require.code, 'UNSUPPORTED_PLATFORM');
  assert.equal(r.require.name, 'ForkpointError');
  assert.equal(r.require.forkpointError, true);
  assert.equal(r.require.cause, true, "the loader's error is kept as the cause");
  const platform = `${process.platform}-${process.arch}`;
  assert.ok(r.require.message.startsWith(`forkpoint's native binary for ${platform}`), r.require.message);
  assert.ok(r.require.message.includes(`install ${HOST} (\`npm install ${HOST}@${VERSION}\`)`), r.require.message);
  assert.match(r.require.message, /--omit=optional/);
  assert.match(r.require.message, /forkpoint-web \(WebAssembly\)/);
  assert.deepEqual(r.import, r.require, 'import() fails the same way');

  const cli = spawnSync(process.execPath, ['node_modules/forkpoint/bin/forkpoint.mjs', '--version'], { cwd: dir, env, encoding: 'utf8' });
  assert.equal(cli.status, 1, cli.stderr);
  assert.equal(cli.stderr, `forkpoint: UNSUPPORTED_PLATFORM: ${r.require.message}\n`);

  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--no-package-lock', '--loglevel=error', tarballs[HOST]], dir);
  // A binary that is there but does not load: the error says so, with the system's reason.
  const installed = join(dir, 'node_modules', HOST, `forkpoint.${HOST_DIR}.node`);
  const good = readFileSync(installed);
  writeFileSync(installed, 'not a shared object\n');
  const broken = loadCheck(dir).require;
  assert.equal(broken.code, 'UNSUPPORTED_PLATFORM');
  const reason = broken.message.match(new RegExp(`is installed \\(${HOST}\\) but does not load: (.+?)\\. Without native code`))?.[1];
  assert.ok(reason && reason !== 'see the cause', broken.message);
  writeFileSync(installed, good);
  assert.deepEqual(loadCheck(dir), { exports: true, imported: true });
  assert.equal(run(process.execPath, ['node_modules/forkpoint/bin/forkpoint.mjs', '--version'], dir).trim(), VERSION);
});

test('on a platform with no binary (process.arch faked as riscv64 before forkpoint loads), the error names the platform, lists the published ones and suggests forkpoint-web', () => {
  const dir = project('other-platform', { type: 'commonjs' }, NODE_PACKAGES);
  assert.deepEqual(loadCheck(dir), { exports: true, imported: true }, 'loads on this machine');
  writeFileSync(join(dir, 'riscv64.cjs'), "Object.defineProperty(process, 'arch', { value: 'riscv64' });\n");
  const r = loadCheck(dir, ['--require', './riscv64.cjs']);
  assert.equal(r.require.code, 'UNSUPPORTED_PLATFORM');
  assert.equal(r.require.forkpointError, true);
  const m = r.require.message;
  assert.ok(m.startsWith(`forkpoint has no native binary for ${process.platform}-riscv64`), m);
  assert.ok(m.includes(`process.platform: ${process.platform}, process.arch: riscv64`), m);
  assert.ok(m.includes(`Binaries are published for: `), m);
  for (const p of PLATFORM_DIRS) assert.ok(m.includes(p), `${p} is not listed: ${m}`);
  assert.match(m, /forkpoint-web \(WebAssembly\)/);
  assert.doesNotMatch(m, /npm install/, 'no package to install exists');
  assert.deepEqual(r.import, r.require);
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
  // Vite colours its output where CI is set (picocolors), bold inside the URL.
  const plain = () => log.replace(/\x1b\[[0-9;]*m/g, '');
  try {
    await new Promise((resolve, reject) => {
      let poll;
      const done = (f, v) => (clearTimeout(t), clearTimeout(poll), f(v));
      const t = setTimeout(() => done(reject, new Error(`Vite's dev server did not start:\n${log}`)), 60_000);
      vite.once('exit', (code) => done(reject, new Error(`Vite's dev server exited (${code}):\n${log}`)));
      const check = () => (plain().includes(`127.0.0.1:${port}`) ? done(resolve) : (poll = setTimeout(check, 100)));
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
