// `forkpoint explore FILE` end to end in Chromium: the CLI serves the installed
// forkpoint-web (page, library, wasm and the shared layer through the import
// map) and the page imports the file given; the same command again opens the
// session imported before (its id is the source's own), without a copy.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium.mjs';

const bin = fileURLToPath(new URL('../../npm/forkpoint/bin/forkpoint.mjs', import.meta.url));
const CC = fileURLToPath(new URL('../../../shared/fixtures/real/marot-spotter_tool_heavy.jsonl', import.meta.url));
const CC_ID = 'd6e0bada-1959-4eec-a9d2-0bfade768d8f';
const skip = !existsSync(CHROMIUM) ? 'Chromium is not installed' : !existsSync(CC) ? 'the real fixtures are not there' : false;

/** Starts `forkpoint explore …`; resolves `{url, proc}` once it prints the URL. */
function explore(...args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [bin, 'explore', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stderr.on('data', (d) => (err += d));
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /forkpoint session explorer: (\S+)/.exec(out);
      if (m) resolve({ url: m[1], proc });
    });
    proc.on('exit', (code) => reject(new Error(`explore exited ${code}: ${err}`)));
  });
}

const stop = (proc) =>
  new Promise((resolve) => {
    proc.removeAllListeners('exit');
    proc.on('exit', resolve);
    proc.kill('SIGTERM');
  });

describe('forkpoint explore FILE', { skip }, () => {
  let browser;
  let server;
  before(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    server = await explore(CC);
  });
  after(async () => {
    await browser?.close();
    if (server) await stop(server.proc);
  });

  it('imports the file and opens it; the same URL again opens it without another copy', async () => {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const idle = () => page.waitForFunction(() => document.body.dataset.ready === 'true' && !document.body.dataset.busy, null, { timeout: 30_000 });
    const listed = () => page.$$eval('[data-testid="session-item"]', (els) => els.map((e) => e.getAttribute('data-session-id')));
    const active = () => page.$eval('[data-testid="session-item"].active', (e) => e.getAttribute('data-session-id'));
    const url = new URL(server.url);
    url.searchParams.set('db', `explore-cli-${process.pid}`);
    await page.goto(url.href);
    await idle();
    await page.waitForFunction(() => document.querySelector('[data-testid="session-item"].active'), null, { timeout: 30_000 });
    assert.deepEqual(await listed(), [CC_ID]);
    assert.equal(await active(), CC_ID);
    assert.equal(new URL(page.url()).searchParams.get('open'), null, 'the open parameter is dropped (a reload imports nothing)');
    assert.equal(await page.$eval('[data-testid="error-banner"]', (e) => e.hidden), true);

    await page.goto(url.href);
    await idle();
    await page.waitForFunction(() => /imported before/.test(document.getElementById('status')?.textContent ?? ''), null, { timeout: 30_000 });
    assert.deepEqual(await listed(), [CC_ID], 'no copy');
    assert.equal(await active(), CC_ID);
    assert.equal(await page.$eval('[data-testid="error-banner"]', (e) => e.hidden), true);
    assert.deepEqual(errors, []);
  });
});
