// Copies the internal workspace packages into a public package's dist, so a
// user installs `forkpoint` or `forkpoint-web` and nothing else:
//   dist/shared/  ← @forkpoint/shared's build (`cjs` or `esm` flavour, with its .d.ts)
//   dist/types.d.ts ← @forkpoint/types (generated from the Rust types)
// and rewrites every `@forkpoint/shared` / `@forkpoint/types` specifier in
// dist's .js and .d.ts files to the relative path of the copy. Run from the
// package's folder after `tsc`: `node ../../scripts/vendor-internal.mjs cjs|esm [DIR]`
// (DIR: the build's folder, default dist). Also writes DIR/package.json with
// the flavour's `type`, so Node and TypeScript read DIR's files as that format.
// Fails if a specifier is left over, so a stale or unbuilt layer cannot be
// packed silently.
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const flavour = process.argv[2];
if (flavour !== 'cjs' && flavour !== 'esm') {
  console.error('usage: node vendor-internal.mjs cjs|esm [DIR] (from the package folder, after tsc)');
  process.exit(2);
}
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(process.cwd(), process.argv[3] ?? 'dist');
const sharedDist = join(root, 'npm/shared/dist');
const typesFile = join(root, 'ts-types/index.d.ts');

for (const need of [join(sharedDist, flavour, 'index.js'), join(sharedDist, 'esm/index.d.ts'), typesFile, dist]) {
  if (!existsSync(need)) {
    console.error(`vendor-internal: ${relative(root, need)} is missing: build @forkpoint/shared first (bash scripts/build.sh)`);
    process.exit(1);
  }
}

const shared = join(dist, 'shared');
rmSync(shared, { recursive: true, force: true });
// The JavaScript of the flavour; the declarations are the same for both (the
// package's own `type` decides how they are read).
cpSync(join(sharedDist, flavour), shared, { recursive: true, filter: (f) => !f.endsWith('package.json') && !f.endsWith('.d.ts') });
cpSync(join(sharedDist, 'esm'), shared, { recursive: true, filter: (f) => statSync(f).isDirectory() || f.endsWith('.d.ts') });
writeFileSync(join(dist, 'types.d.ts'), readFileSync(typesFile));
writeFileSync(join(dist, 'package.json'), `{"type":"${flavour === 'cjs' ? 'commonjs' : 'module'}"}\n`);

/** Every .js / .d.ts file under `dir`, except in folders of another build (with a package.json). */
function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return existsSync(join(p, 'package.json')) ? [] : files(p);
    return /\.(js|d\.ts)$/.test(e.name) ? [p] : [];
  });
}

const target = { shared: join(shared, 'index.js'), types: join(dist, 'types.js') };
const spec = /(["'])@forkpoint\/(shared|types)\1/g;
let left = [];
for (const f of files(dist)) {
  const text = readFileSync(f, 'utf8');
  const out = text.replace(spec, (_, q, name) => {
    let rel = relative(dirname(f), target[name]).split(sep).join('/');
    if (!rel.startsWith('.')) rel = './' + rel;
    return q + rel + q;
  });
  if (out !== text) writeFileSync(f, out);
  if (/@forkpoint\/(shared|types)/.test(out.replace(/^\s*(\/\/|\*).*$/gm, ''))) left.push(relative(root, f));
}
if (left.length) {
  console.error(`vendor-internal: internal package names left in ${left.join(', ')}`);
  process.exit(1);
}
