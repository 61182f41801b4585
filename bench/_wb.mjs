import { openAsBlob, readFileSync } from 'node:fs';
const web = await import('forkpoint-web');
const [f, how] = process.argv.slice(2);
const t = performance.now();
const s = how === 'blob' ? await web.Session.fromBlob(await openAsBlob(f)) : web.Session.fromJsonl(readFileSync(f));
const tl = performance.now() - t;
const n = s.getSessionContext().messages.length;
console.log(how, tl.toFixed(0), (performance.now() - t).toFixed(0), n);
