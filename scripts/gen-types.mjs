// Regenerates ts-types/index.d.ts from the Rust types (crates/core, feature "ts").
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = execFileSync('cargo', ['run', '--quiet', '-p', 'forkpoint-core', '--features', 'ts', '--example', 'gen_types'], {
  cwd: root,
  encoding: 'utf8',
  maxBuffer: 64 << 20,
});
writeFileSync(new URL('../ts-types/index.d.ts', import.meta.url), out);
