// The child-process side of spawn.mjs: runs one provider server and answers
// the parent's IPC calls ({id, cmd: 'start' | 'requests' | 'close'}).
import { startProviderServer } from './server.mjs';

let srv = null;

process.on('message', async ({ id, cmd, options }) => {
  try {
    let result;
    if (cmd === 'start') {
      srv = await startProviderServer(options);
      result = { url: srv.url, origin: srv.origin, port: srv.port };
    } else if (cmd === 'requests') {
      result = srv.requests.map((r) => ({ ...r }));
    } else if (cmd === 'close') {
      await srv?.close();
      result = true;
    } else {
      throw new Error(`unknown command ${cmd}`);
    }
    process.send({ id, result });
    if (cmd === 'close') process.disconnect();
  } catch (e) {
    process.send({ id, error: { message: e.message, stack: e.stack } });
  }
});

// The parent went away: nothing left to serve.
process.on('disconnect', () => process.exit(0));
