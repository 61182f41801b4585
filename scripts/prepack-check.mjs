// `prepack` of the public packages: refuses to pack a package whose build is
// missing or older than its sources, with the command that fixes it. (Building
// here would mean a release build of the Rust crates inside `npm pack`.)
// Usage (from the package folder): node ../../scripts/prepack-check.mjs forkpoint|forkpoint-web
// (The platform packages, npm/forkpoint/npm/<platform>/, have no prepack:
// `napi pre-publish` publishes them from a staged copy.)
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
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

// The platform packages (npm/forkpoint/npm/<platform>/, made by `napi create-npm-dirs`).
const npmDir = join(root, 'npm/forkpoint/npm');
const platformPackages = readdirSync(npmDir).map((dir) => ({
  dir,
  name: JSON.parse(readFileSync(join(npmDir, dir, 'package.json'), 'utf8')).name,
}));

const checks = {
  forkpoint: [
    ['npm/forkpoint/dist/index.js', Math.max(ts('npm/forkpoint/src'), shared)],
    ['npm/forkpoint/dist/shared/index.js', shared],
    ['npm/forkpoint/native/index.js', 0],
    ['npm/forkpoint/native/binding.js', 0],
    // The local build (not in this tarball; build.sh copies it into its
    // platform package, which the packaging test packs beside this one).
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
// `npm publish` of forkpoint: only with the optionalDependencies `napi pre-publish`
// writes (one per platform package, at this version), or npm would install no binary.
if (which === 'forkpoint' && process.env.npm_command === 'publish') {
  const manifest = JSON.parse(readFileSync(join(root, 'npm/forkpoint/package.json'), 'utf8'));
  const missing = platformPackages.map((p) => p.name).filter((name) => manifest.optionalDependencies?.[name] !== manifest.version);
  if (missing.length) {
    console.error(
      `\nforkpoint: refusing to publish without its platform packages as optionalDependencies (${missing.map((n) => `${n}@${manifest.version}`).join(', ')}).\n` +
        'Publish through .github/workflows/release.yml: `napi artifacts` then `napi pre-publish` add them and publish the platform packages first.\n',
    );
    process.exit(1);
  }
}
