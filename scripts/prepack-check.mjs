// `prepack` of the public packages: refuses to pack a package whose build is
// missing or older than its sources, with the command that fixes it. (Building
// here would mean a release build of the Rust crates inside `npm pack`.)
// Usage (from the package folder): node ../../scripts/prepack-check.mjs forkpoint|forkpoint-web
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const which = process.argv[2];

/** The newest modification time under `p` (files whose name passes `keep`). */
function newest(p, keep = () => true) {
  if (!existsSync(p)) return 0;
  const st = statSync(p);
  if (!st.isDirectory()) return keep(p) ? st.mtimeMs : 0;
  let t = 0;
  for (const e of readdirSync(p)) if (e !== 'target' && e !== 'node_modules') t = Math.max(t, newest(join(p, e), keep));
  return t;
}

const rust = newest(join(root, 'crates'), (f) => /\.(rs|toml)$/.test(f));
const ts = (dir) => newest(join(root, dir), (f) => f.endsWith('.ts'));
const shared = Math.max(ts('npm/shared/src'), newest(join(root, 'ts-types/index.d.ts')));

const checks = {
  forkpoint: [
    ['npm/forkpoint/dist/index.js', Math.max(ts('npm/forkpoint/src'), shared)],
    ['npm/forkpoint/dist/shared/index.js', shared],
    ['npm/forkpoint/native/index.js', 0],
    ...readdirSync(join(root, 'npm/forkpoint/native'))
      .filter((f) => f.endsWith('.node'))
      .map((f) => [`npm/forkpoint/native/${f}`, rust]),
  ],
  'forkpoint-web': [
    ['wasm/dist/web.js', Math.max(ts('wasm/src'), shared)],
    ['wasm/dist/shared/index.js', shared],
    ['wasm/pkg/web/forkpoint_wasm.js', rust],
    ['wasm/pkg/web/forkpoint_wasm_bg.inline.js', rust],
    ['wasm/pkg/node/forkpoint_wasm_bg.wasm', rust],
  ],
}[which];
if (!checks) {
  console.error('usage: prepack-check.mjs forkpoint|forkpoint-web');
  process.exit(2);
}
if (which === 'forkpoint' && !checks.some(([f]) => f.endsWith('.node'))) checks.push(['npm/forkpoint/native/*.node', rust]);

const bad = [];
for (const [file, sourcesTime] of checks) {
  const p = join(root, file);
  if (!existsSync(p)) bad.push(`${file} is missing`);
  else if (statSync(p).mtimeMs < sourcesTime) bad.push(`${file} is older than its sources`);
}
if (bad.length) {
  console.error(`\n${which}: refusing to pack an unbuilt package:\n  ${bad.join('\n  ')}\nRun \`bash scripts/build.sh\` in ${relative(process.cwd(), root) || '.'} first, then pack again.\n`);
  process.exit(1);
}
