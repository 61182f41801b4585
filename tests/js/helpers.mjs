// Shared by the JS tests: the backend under test and fixture paths.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** 'napi' (the forkpoint addon) or 'wasm' (forkpoint-web's Node build). */
export const BACKEND = process.env.FORKPOINT_BACKEND ?? 'napi';

export const napi = require('forkpoint');
export const web = await import('forkpoint-web');

/** The package under test. */
export const pkg = BACKEND === 'wasm' ? web : napi;

/** Loads a session from text or bytes with the backend under test. */
export function fromJsonl(data, opts) {
  return BACKEND === 'wasm' ? web.Session.fromJsonl(data, opts) : napi.SessionLoader.fromJsonl(data, opts);
}

export const fixturesDir = fileURLToPath(new URL('../fixtures/', import.meta.url));
export const realDir = fileURLToPath(new URL('../../../shared/fixtures/real/', import.meta.url));
export const fixture = (name) => fixturesDir + name;
export const fixtureBytes = (name) => readFileSync(fixture(name));

/** Asserts that `f` throws a ForkpointError with `code` (and returns it). */
export function throwsCode(assert, f, code) {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof pkg.ForkpointError, `expected ForkpointError, got ${e?.constructor?.name}: ${e?.message}`);
    assert.ok(e instanceof Error);
    assert.equal(e.code, code, e.message);
    return e;
  }
  assert.fail(`expected ${code}`);
}

export async function rejectsCode(assert, p, code) {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof pkg.ForkpointError, `expected ForkpointError, got ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.code, code, e.message);
    return e;
  }
  assert.fail(`expected ${code}`);
}
