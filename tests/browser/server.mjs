// The server of the browser tests: the explorer's static server
// (scripts/explorer.mjs) on 127.0.0.1, with /real/NAME mapped to the real
// session files beside the repository (../shared/fixtures/real).
import { fileURLToPath } from 'node:url';
import { startServer } from '../../scripts/explorer.mjs';

const real = fileURLToPath(new URL('../../../shared/fixtures/real/', import.meta.url));

/** Starts the server on a free port; resolves to `{ url, close }`. */
export function serve() {
  return startServer({ mounts: { '/real/': real } });
}
