// The throwaway cluster of pg-cluster.mjs: it starts, answers through psql,
// two in one process get different ports, and stop() ends and removes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { startCluster } from './pg-cluster.mjs';

/** Whether something accepts TCP connections on 127.0.0.1:port. */
const accepts = (port) =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

test('a cluster starts, runs select 1 through psql, and stops (idempotently)', async () => {
  const pg = await startCluster();
  assert.match(pg.url, /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
  assert.equal(await pg.psql('select 1'), '1\n');
  assert.equal((await pg.psql("select current_setting('fsync')")).trim(), 'off');
  assert.ok(existsSync(pg.dir));
  assert.ok(await accepts(pg.port));
  await pg.stop();
  assert.equal(existsSync(pg.dir), false, 'the directory is removed');
  assert.equal(await accepts(pg.port), false, 'the server is gone');
  await pg.stop();
  await assert.rejects(pg.psql('select 1'), /psql failed/);
});

test('two clusters in one process get different ports and separate data', async () => {
  const [a, b] = await Promise.all([startCluster(), startCluster()]);
  try {
    assert.notEqual(a.port, b.port);
    assert.notEqual(a.dir, b.dir);
    await a.psql('create table only_in_a (x int)');
    assert.equal(await a.psql("select count(*) from pg_tables where tablename = 'only_in_a'"), '1\n');
    assert.equal(await b.psql("select count(*) from pg_tables where tablename = 'only_in_a'"), '0\n');
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('a cluster left running is stopped and removed when the process exits', async () => {
  const { spawnSync } = await import('node:child_process');
  const script = `import { startCluster } from ${JSON.stringify(new URL('./pg-cluster.mjs', import.meta.url).href)};
const pg = await startCluster();
process.stdout.write(JSON.stringify({ dir: pg.dir, port: pg.port }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const { dir, port } = JSON.parse(r.stdout);
  assert.equal(existsSync(dir), false);
  assert.equal(await accepts(port), false);
});
