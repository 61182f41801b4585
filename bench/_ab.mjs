// A/B of stream commit intervals (temporary, not committed).
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RUNNERS, runBench } from './stream-baseline.mjs';
const require = createRequire(import.meta.url);
const { Agent, JSONStore, ToolRegistry, createProvider } = require('forkpoint');
const MODEL = { anthropic: 'claude-sonnet-4-5', openai: 'gpt-4.1' };
const intervals = (process.env.IV ?? '10,13').split(',').map(Number);
const providers = (process.env.PROV ?? 'anthropic,openai').split(',');
const runs = { burst: Number(process.env.RB ?? 3), paced: Number(process.env.RP ?? 5) };
for (const p of providers) {
  for (const iv of intervals) {
    RUNNERS[p][`forkpoint ${iv} ms`] = async (url) => {
      const model = createProvider({ provider: p, model: MODEL[p], apiKey: 'sk-bench', baseURL: url });
      model.wire.commitIntervalMs = iv;
      const agent = await Agent.create({ model }, { store: new JSONStore(mkdtempSync(join(tmpdir(), 'fp-ab-'))), toolRegistry: new ToolRegistry() });
      const r = await agent.chat('Write a long text.');
      await agent.close();
      return { text: r.text };
    };
  }
}
const rows = await runBench({ chunks: 10000, runs, providers, onRow: (r) => console.log(`${r.provider} ${r.mode} ${r.runner}: ${r.cpuMs.toFixed(0)} ms CPU`) });
for (const p of providers) for (const m of ['burst', 'paced']) {
  const base = rows.find((r) => r.provider === p && r.mode === m && r.runner.startsWith('plain'));
  for (const r of rows.filter((r) => r.provider === p && r.mode === m && !r.runner.startsWith('plain'))) console.log(`${p} ${m} ${r.runner}: ${(r.cpuMs / base.cpuMs).toFixed(2)}×`);
}
