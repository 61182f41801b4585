// The demo agent's tools and scripted model, shared by the demo and its child process.
const { ToolRegistry, ScriptedProvider } = require('forkpoint');

const tables = ['orders', 'order_items', 'customers', 'payments', 'shipments', 'refunds', 'invoices'];

function tools() {
  return new ToolRegistry()
    .register({
      name: 'read_schema',
      description: 'Reads the current schema version',
      inputSchema: { type: 'object', properties: { db: { type: 'string' } } },
      run: ({ db }) => ({ db, version: 1, tables }),
    })
    .register({
      name: 'run_migration',
      description: 'Migrates tables to a schema version (slow)',
      inputSchema: { type: 'object', properties: { to: { type: 'number' }, tables: { type: 'array' } } },
      run: async ({ to, tables: which }, ctx) => {
        // Slow on the first run (the demo kills the process here), quick afterwards.
        const slow = process.env.DEMO_SLOW_TOOL === '1';
        for (const t of which) {
          if (ctx.signal.aborted) throw new Error('aborted');
          await new Promise((r) => setTimeout(r, slow ? 2000 : 5));
          void t;
        }
        return { migrated: which, to };
      },
    })
    .register({
      name: 'check_tables',
      description: 'Reports which tables are at which schema version',
      inputSchema: { type: 'object' },
      run: () => ({ v2: tables.slice(0, 3), v1: tables.slice(3) }),
    });
}

/** The scripted model for each phase of the demo. */
function model(phase) {
  const scripts = {
    'first-run': [
      { thinking: 'Check the schema first.', text: 'I will read the schema, then migrate.', toolCalls: [{ name: 'read_schema', arguments: { db: 'orders' } }] },
      { text: 'Schema v1 with 7 tables. Migrating all of them to v2.', toolCalls: [{ name: 'run_migration', arguments: { to: 2, tables } }] },
      { text: 'Done.' },
    ],
    resumed: [
      (req) => {
        const sealed = req.messages.at(-2);
        return {
          thinking: `My last call was sealed: ${sealed?.role === 'toolResult' ? JSON.parse(sealed.content[0].text).error : '?'} Check what happened before retrying.`,
          text: 'The migration was interrupted. Checking which tables were migrated before retrying.',
          toolCalls: [{ name: 'check_tables', arguments: {} }],
        };
      },
      (req) => {
        const state = JSON.parse(req.messages.at(-1).content[0].text);
        return { text: `${state.v2.length} tables are on v2 already; migrating the other ${state.v1.length}.`, toolCalls: [{ name: 'run_migration', arguments: { to: 2, tables: state.v1 } }] };
      },
      { text: 'All 7 tables are on schema v2. Migration complete.' },
    ],
    fork: [
      { text: 'Rolling back instead: restoring v1 on the three tables that were migrated first.', toolCalls: [{ name: 'run_migration', arguments: { to: 1, tables: tables.slice(0, 3) } }] },
      { text: 'Rolled back: everything is on schema v1 again.' },
    ],
  };
  return new ScriptedProvider(scripts[phase], { provider: 'scripted', model: `demo-${phase}` });
}

module.exports = { tools, model, deps: (store) => ({ store, toolRegistry: tools() }) };
