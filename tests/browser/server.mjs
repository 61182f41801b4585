// A static file server for the browser tests, on 127.0.0.1 (repository root as /).
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.jsonl': 'application/x-ndjson',
  '.wasm': 'application/wasm',
  '.gz': 'application/gzip',
  '.css': 'text/css',
};

/** Starts the server on a free port; resolves to `{ url, close }`. */
export function serve() {
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    // /real/NAME: the real session files beside the repository (../shared/fixtures/real).
    const real = join(root, '../shared/fixtures/real/');
    const path = url.pathname.startsWith('/real/')
      ? normalize(join(real, decodeURIComponent(url.pathname.slice('/real/'.length))))
      : normalize(join(root, decodeURIComponent(url.pathname)));
    if (!path.startsWith(root) && !path.startsWith(real)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(path);
      res.writeHead(200, { 'content-type': types[extname(path)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}
