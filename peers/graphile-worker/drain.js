// The PostgreSQL drain peer of `leasehold bench work --processes`: graphile-worker worker
// processes (concurrency 10 each, a no-op task) draining one backlog.
//   node drain.js enqueue ITEMS   migrates, then enqueues ITEMS no-op jobs in one statement
//   node drain.js work            one worker process: runs until the queue is empty, then
//                                 prints one JSON line: its first lock instant, its last
//                                 completion instant (ms since the epoch) and every job's
//                                 lock → complete time (ms)
// DATABASE_URL names the database. `side-by-side.sh` runs both sides in the same minutes.
const { run, makeWorkerUtils } = require("graphile-worker");

async function enqueue(n) {
  const utils = await makeWorkerUtils({ connectionString: process.env.DATABASE_URL });
  await utils.migrate();
  await utils.withPgClient((c) =>
    c.query(
      "SELECT graphile_worker.add_job('noop', json_build_object('i', g)) FROM generate_series(1, $1) g",
      [n],
    ),
  );
  await utils.release();
}

async function work() {
  const latencies = [];
  let first = Infinity;
  let last = 0;
  const runner = await run({
    connectionString: process.env.DATABASE_URL,
    concurrency: 10,
    noHandleSignals: true,
    pollInterval: 10,
    taskList: { noop: async () => {} },
    logger: quiet(),
  });
  runner.events.on("job:complete", ({ job, error }) => {
    if (error) return;
    const at = Date.now();
    const locked = new Date(job.locked_at).getTime();
    first = Math.min(first, locked);
    last = Math.max(last, at);
    latencies.push(at - locked);
  });
  const utils = await makeWorkerUtils({ connectionString: process.env.DATABASE_URL });
  // Done when no job is left to run or running.
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    const left = await utils.withPgClient((c) =>
      c.query("SELECT count(*)::int AS n FROM graphile_worker.jobs"),
    );
    if (left.rows[0].n === 0) break;
  }
  await runner.stop();
  await utils.release();
  console.log(JSON.stringify({ first, last, latencies }));
}

function quiet() {
  const { Logger } = require("graphile-worker");
  return new Logger(() => () => {});
}

const [verb, arg] = process.argv.slice(2);
(verb === "enqueue" ? enqueue(Number(arg || 20000)) : work()).catch((e) => {
  console.error(e);
  process.exit(1);
});
