/**
 * `forkpoint explore`: serves the session explorer of the installed
 * `forkpoint-web` package (its `explorer/` page, `dist/` and `pkg/web/`) on
 * 127.0.0.1, read-only. Nothing is read from a repository checkout.
 */
import { createServer } from 'node:http';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { createRequire } from 'node:module';
import { ForkpointError } from '@forkpoint/shared';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.wasm': 'application/wasm',
  '.jsonl': 'application/x-ndjson',
  '.gz': 'application/gzip',
  '.svg': 'image/svg+xml',
};

/** The folder of the package `name` that `from` (a file) resolves to, or null. */
function packageRoot(name: string, from: string): string | null {
  let file: string;
  try {
    file = createRequire(from).resolve(name);
  } catch {
    return null;
  }
  for (let d = dirname(file); d !== dirname(d); d = dirname(d)) {
    const pj = join(d, 'package.json');
    if (!existsSync(pj)) continue;
    try {
      if ((JSON.parse(readFileSync(pj, 'utf8')) as { name?: string }).name === name) return d;
    } catch {
      return null;
    }
  }
  return null;
}

/** Where the explorer's files are: the installed forkpoint-web (self-contained: its page imports only its own files). */
export interface ExplorerFiles {
  /** The forkpoint-web package folder (holds `explorer/index.html`). */
  web: string;
}

/**
 * Finds the installed forkpoint-web (resolved as Node resolves it from this
 * package). Missing, or without its explorer: `NOT_FOUND` naming what to install.
 */
export function findExplorer(from: string = __filename): ExplorerFiles {
  const web = packageRoot('forkpoint-web', from);
  const page = web && join(web, 'explorer', 'index.html');
  if (!web || !existsSync(page!)) {
    throw new ForkpointError({
      code: 'NOT_FOUND',
      message: web
        ? `the installed forkpoint-web (${web}) has no explorer/index.html: install a forkpoint-web that ships it (npm install forkpoint-web)`
        : 'the session explorer is in the package forkpoint-web, which is not installed: npm install forkpoint-web',
    });
  }
  return { web };
}

export interface ExplorerServer {
  /** `http://127.0.0.1:{port}` */
  origin: string;
  port: number;
  /** The page's URL (with `?open=` when a file was given). */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves the explorer on 127.0.0.1:`port` (0: any free port; a port in use
 * falls back to a free one, reported by `onFallback`). `file`: a session file
 * the page imports (or opens, when imported before) as it starts.
 */
export async function serveExplorer(opts: { port?: number; file?: string; files?: ExplorerFiles; onFallback?: (port: number) => void } = {}): Promise<ExplorerServer> {
  const files = opts.files ?? findExplorer();
  const web = normalize(files.web + sep);
  let openFile: { url: string; path: string } | null = null;
  if (opts.file) {
    const path = resolve(opts.file);
    const s = await stat(path).catch((e: NodeJS.ErrnoException) => {
      throw new ForkpointError({ code: e.code === 'ENOENT' ? 'NOT_FOUND' : 'IO', message: e.code === 'ENOENT' ? 'no such file' : e.message, path: opts.file });
    });
    if (!s.isFile()) throw new ForkpointError({ code: 'INVALID_INPUT', message: 'not a file', path: opts.file });
    openFile = { url: `/_open/${encodeURIComponent(basename(path))}`, path };
  }

  const server = createServer(async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405).end();
    let pathname: string;
    try {
      pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    } catch {
      return void res.writeHead(400).end();
    }
    if (pathname === '/') return void res.writeHead(302, { location: '/explorer/' }).end();
    let path: string;
    let base: string;
    if (openFile && pathname === decodeURIComponent(openFile.url)) {
      path = openFile.path;
      base = '';
    } else {
      base = web;
      path = normalize(join(base, pathname));
    }
    // Nothing outside the package, no dot-files, no node_modules.
    if (base && (!path.startsWith(base) || pathname.includes('\0') || /[\\/](\.|node_modules[\\/])/.test(path.slice(base.length - 1)))) {
      return void res.writeHead(403).end();
    }
    try {
      let s = await stat(path);
      if (s.isDirectory()) {
        if (!pathname.endsWith('/')) return void res.writeHead(301, { location: `${pathname}/` }).end();
        path = join(path, 'index.html');
        s = await stat(path);
      }
      const headers = {
        'content-type': TYPES[extname(path)] ?? 'application/octet-stream',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      };
      res.writeHead(200, { ...headers, 'content-length': s.size });
      if (req.method === 'HEAD') return void res.end();
      createReadStream(path)
        .on('error', () => res.destroy())
        .pipe(res);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  const listen = (p: number) =>
    new Promise<number>((ok, fail) => {
      server.once('error', fail);
      server.listen(p, '127.0.0.1', () => {
        server.off('error', fail);
        ok((server.address() as { port: number }).port);
      });
    });
  const want = opts.port ?? 0;
  const port = await listen(want).catch(async (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EADDRINUSE' || want === 0) throw new ForkpointError({ code: 'IO', message: `cannot listen on 127.0.0.1:${want}: ${e.message}` });
    const p = await listen(0);
    opts.onFallback?.(p);
    return p;
  });
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    port,
    url: `${origin}/explorer/${openFile ? `?open=${encodeURIComponent(openFile.url)}` : ''}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
