// A provider stand-in for bench/agent-wire.mjs, in a process of its own: it
// reads each request's whole body, then answers Anthropic's real stream of a
// short text (tests/js/providers/wire.mjs). Prints its URL, then serves until killed.
import http from 'node:http';
import { sse, okHeaders } from '../tests/js/providers/wire.mjs';

const events = sse('anthropic', { text: 'ok' });
const srv = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, okHeaders('anthropic'));
    for (const e of events) res.write(e);
    res.end();
  });
});
srv.listen(0, '127.0.0.1', () => console.log(`http://127.0.0.1:${srv.address().port}`));
