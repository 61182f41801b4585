// Child process for events-node.test.mjs: appends events one by one, with pauses.
const { EventLog } = require('forkpoint');
(async () => {
  const [path, total] = process.argv.slice(2);
  const log = await EventLog.open(path, { durability: 'fsync' });
  process.stdout.write('ready\n');
  for (let i = 1; i <= Number(total); i++) {
    await log.append({ type: 'text_chunk', step: 1, delta: `d${i}` });
    if (i % 25 === 0) await new Promise((r) => setTimeout(r, 5));
  }
  await log.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
