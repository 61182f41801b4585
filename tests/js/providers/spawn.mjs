// A provider server (server.mjs) in its own process, so that a benchmark's
// CPU figures (process.cpuUsage) count only the client. Same options as
// startProviderServer, except that `script` must be an array (it crosses the
// process boundary by structured clone; use `times` to repeat an item).
import { fork } from 'node:child_process';
import { once } from 'node:events';

/**
 * Starts a provider server in a child process.
 * Returns { provider, url, origin, port, pid, requests(): Promise<records>, close(): Promise<void> }.
 */
export async function spawnProviderServer(options) {
  if (typeof options?.script === 'function') throw new Error('spawnProviderServer: script must be an array (functions cannot cross processes)');
  const child = fork(new URL('./server-child.mjs', import.meta.url), [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pending = new Map();
  let nextId = 0;
  child.on('message', ({ id, result, error }) => {
    const p = pending.get(id);
    pending.delete(id);
    if (error) p?.reject(Object.assign(new Error(error.message), { stack: error.stack }));
    else p?.resolve(result);
  });
  const exited = once(child, 'exit');
  exited.then(() => {
    for (const p of pending.values()) p.reject(new Error('provider server process exited'));
    pending.clear();
  });
  const call = (cmd, extra = {}) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.send({ id, cmd, ...extra });
    });
  const { url, origin, port } = await call('start', { options });
  return {
    provider: options.provider,
    url,
    origin,
    port,
    pid: child.pid,
    requests: () => call('requests'),
    async close() {
      if (child.exitCode === null && child.connected) await call('close').catch(() => {});
      if (child.exitCode === null) await exited;
    },
  };
}
