#!/usr/bin/env node
// `npm run explorer`: serves the repository on 127.0.0.1 and prints the URL of
// the session explorer (wasm/explorer/). Builds the web package first if it is
// missing. Options: --port N (default 8080; a free port is used if N is taken).
import { createServer } from 'node:http';
import { createReadStream, existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.wasm': 'application/wasm',
  '.jsonl': 'application/x-ndjson',
  '.gz': 'application/gzip',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/**
 * Serves the files under `root` read-only on `host:port` (port 0: any free
 * port). A path ending in `/` serves its index.html; `/` goes to the explorer.
 * `mounts` maps URL prefixes to other folders (`{'/real/': dir}`).
 * Resolves to `{ url, port, close }`.
 */
export function startServer({ port = 0, host = '127.0.0.1', root = ROOT, mounts = {} } = {}) {
  const dir = (d) => normalize(d.endsWith(sep) ? d : d + sep);
  const server = createServer(async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405).end();
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    } catch {
      return void res.writeHead(400).end();
    }
    if (pathname === '/') return void res.writeHead(302, { location: '/wasm/explorer/' }).end();
    const mount = Object.keys(mounts).find((m) => pathname.startsWith(m));
    const base = dir(mount ? mounts[mount] : root);
    if (mount) pathname = '/' + pathname.slice(mount.length);
    let path = normalize(join(base, pathname));
    // Nothing outside the root, and no dot-files or dot-folders (.git, .env, …).
    if (!path.startsWith(base) || pathname.includes('\0') || /[\\/]\./.test(path.slice(base.length - 1))) {
      return void res.writeHead(403).end();
    }
    try {
      let s = await stat(path);
      if (s.isDirectory()) {
        if (!pathname.endsWith('/')) return void res.writeHead(301, { location: `${pathname}/` }).end();
        path = join(path, 'index.html');
        s = await stat(path);
      }
      res.writeHead(200, {
        'content-type': TYPES[extname(path)] ?? 'application/octet-stream',
        'content-length': s.size,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      if (req.method === 'HEAD') return void res.end();
      createReadStream(path).on('error', () => res.destroy()).pipe(res);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  const listen = (p) =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, host, () => {
        server.off('error', reject);
        resolve(server.address().port);
      });
    });
  return listen(port)
    .catch((e) => {
      if (e.code !== 'EADDRINUSE' || port === 0) throw e;
      console.error(`port ${port} is taken; using a free port`);
      return listen(0);
    })
    .then((p) => ({
      port: p,
      url: `http://${host}:${p}`,
      close: () => new Promise((r) => server.close(() => r(undefined))),
    }));
}

/** Builds the web package (napi + wasm + TypeScript) if its output is missing. */
function ensureBuilt() {
  const needed = ['wasm/dist/web.js', 'wasm/dist/shared/index.js', 'wasm/pkg/web/forkpoint_wasm_bg.inline.js'];
  const missing = needed.filter((f) => !existsSync(join(ROOT, f)));
  if (missing.length === 0) return;
  console.error(`missing ${missing.join(', ')}: running scripts/build.sh (a few minutes)`);
  const r = spawnSync('bash', ['scripts/build.sh'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('the build failed');
    process.exit(1);
  }
}

function parsePort(argv) {
  const i = argv.findIndex((a) => a === '--port' || a.startsWith('--port='));
  if (i < 0) return 8080;
  const v = argv[i].includes('=') ? argv[i].split('=')[1] : argv[i + 1];
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    console.error(`--port takes a number from 0 to 65535, not ${v}`);
    process.exit(2);
  }
  return n;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const port = parsePort(process.argv.slice(2));
  ensureBuilt();
  const { url, close } = await startServer({ port });
  console.log(`forkpoint session explorer: ${url}/wasm/explorer/`);
  console.log('(serving the repository on 127.0.0.1 only; Ctrl-C to stop)');
  const stop = () => close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
