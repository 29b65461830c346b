// The PostgreSQL enqueue peer of `leasehold bench enqueue`: graphile-worker's addJob, one
// item per call, first by one producer in a loop, then by 16 concurrent producers.
//   npm install && DATABASE_URL=postgres://user@host:port/db node bench.js [ITEMS]
// Run it on its own database of the same server, in the same minutes as leasehold.
const { makeWorkerUtils } = require("graphile-worker");
async function main() {
  const n = Number(process.argv[2] || 2000);
  const utils = await makeWorkerUtils({ connectionString: process.env.DATABASE_URL });
  await utils.migrate();
  for (let i = 0; i < 200; i++) await utils.addJob("noop", { i });
  let t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await utils.addJob("noop", { i });
  let s = Number(process.hrtime.bigint() - t) / 1e9;
  console.log(`graphile one producer ${(n / s).toFixed(0)} /s`);
  t = process.hrtime.bigint();
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < n) { next++; await utils.addJob("noop", { next }); }
  }));
  s = Number(process.hrtime.bigint() - t) / 1e9;
  console.log(`graphile 16 producers ${(n / s).toFixed(0)} /s`);
  await utils.release();
}
main().catch((e) => { console.error(e); process.exit(1); });
