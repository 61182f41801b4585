// Checks that package-lock.json is the lock npm makes for the package.json
// files as they are, so `npm ci` on a fresh clone installs exactly it and
// `npm install` leaves it unchanged. Works on a copy (the manifests and the
// lock in a temporary folder): `npm install --package-lock-only` there, then
// compares. Part of `npm test`.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const tmp = mkdtempSync(join(tmpdir(), 'forkpoint-lock-'));
try {
  for (const f of ['package.json', 'package-lock.json', ...manifest.workspaces.map((w) => `${w}/package.json`)]) {
    mkdirSync(dirname(join(tmp, f)), { recursive: true });
    cpSync(join(root, f), join(tmp, f));
  }
  // No npm_* variables of the npm run that started this: they would point npm at the repository.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) || /^npm_config_cache$/i.test(k)));
  const r = spawnSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], {
    cwd: tmp,
    env,
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    console.error(`npm install --package-lock-only failed:\n${r.stdout}${r.stderr}`);
    process.exit(1);
  }
  const before = readFileSync(join(root, 'package-lock.json'), 'utf8');
  const after = readFileSync(join(tmp, 'package-lock.json'), 'utf8');
  if (before !== after) {
    const a = before.split('\n');
    const b = after.split('\n');
    const i = a.findIndex((line, k) => line !== b[k]);
    console.error(
      `package-lock.json does not match package.json: npm would rewrite it (first difference at line ${i + 1}:\n` +
        `  committed: ${a[i]}\n  npm makes: ${b[i]})\nRun \`npm install\`, check the change and commit package-lock.json.`,
    );
    process.exit(1);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
