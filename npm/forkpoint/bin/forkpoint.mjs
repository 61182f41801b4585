#!/usr/bin/env node
// The `forkpoint` command. The CLI itself is in dist/cli.js (CommonJS); the
// interactive prompt (@inquirer/select) is an ES module, loaded here.
import { createRequire } from 'node:module';
import select, { Separator } from '@inquirer/select';

const require = createRequire(import.meta.url);
let cli;
try {
  cli = require('../dist/cli.js');
} catch (e) {
  // No native binary for this machine: say which and what to install, no stack.
  if (e?.code !== 'UNSUPPORTED_PLATFORM') throw e;
  process.stderr.write(`forkpoint: ${e.code}: ${e.message}\n`);
  process.exit(1);
}
const { main, formatError, exitCode } = cli;
// `forkpoint events … | head`: a closed pipe ends the command quietly.
process.stdout.on('error', (e) => process.exit(e.code === 'EPIPE' ? 0 : 1));

try {
  await main(process.argv, { select, separator: (text) => new Separator(text) });
} catch (e) {
  if (e?.name === 'ExitPromptError') process.exit(130); // Ctrl-C in the prompt
  // Usage errors (exit status 2) were printed by the argument parser, with the help.
  const status = exitCode(e);
  if (status !== 2) process.stderr.write(`${formatError(e)}\n`);
  process.exit(status);
}
