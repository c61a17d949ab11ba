// graphile-worker on PostgreSQL, run as its docs advise: `run()` with a task list, the
// `concurrency` option (16 jobs at a time, as retryq's worker), its default poll interval;
// its workers wake by LISTEN/NOTIFY. Bulk load: one `addJobs` call (one statement).
// Lines on stdout as bench/peers/peer_common.py describes.
//
// Usage: node graphile_worker_peer.js (install|load N|work|pickup|enqueue) URL
"use strict";

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
let gw;
try {
  gw = require("graphile-worker");
} catch (e) {
  emit({ unavailable: `graphile-worker is not installed (${e.message})` });
  process.exit(0);
}
const version = JSON.parse(
  require("fs").readFileSync(require("path").join(require.resolve("graphile-worker"), "../../package.json"), "utf8"),
).version;
const quiet = new gw.Logger(() => () => {});
const [mode, ...rest] = process.argv.slice(2);
const url = rest[rest.length - 1];

async function main() {
  const utils = await gw.makeWorkerUtils({ connectionString: url, logger: quiet });
  if (mode === "install") {
    await utils.migrate();
    emit({ ready: true, version });
    await utils.release();
    return;
  }
  if (mode === "load") {
    const n = Number(rest[0]);
    const specs = Array.from({ length: n }, () => ({ identifier: "noop", payload: {} }));
    const start = process.hrtime.bigint();
    await utils.addJobs(specs);
    emit({ loaded: n, seconds: Number(process.hrtime.bigint() - start) / 1e9 });
    await utils.release();
    return;
  }
  if (mode === "enqueue") {
    const lines = require("readline").createInterface({ input: process.stdin });
    for await (const line of lines) {
      const id = line.trim();
      if (!id) continue;
      await utils.addJob("noop", { id });
      emit({ committed: id, at: Date.now() });
    }
    await utils.release();
    return;
  }
  await utils.release();
  const tally = { jobs: 0, first: null, last: null };
  const noop =
    mode === "pickup"
      ? async (payload) => emit({ started: payload.id, at: Date.now() })
      : async () => {
          const now = Date.now() / 1000;
          if (tally.first === null) tally.first = now;
          tally.jobs += 1;
          tally.last = now;
        };
  const runner = await gw.run({
    connectionString: url,
    concurrency: 16,
    logger: quiet,
    taskList: { noop },
  });
  emit({ ready: true, version });
  if (mode !== "pickup") {
    let seen = -1;
    setInterval(() => {
      if (tally.jobs !== seen && tally.first !== null) {
        seen = tally.jobs;
        emit(tally);
      }
    }, 100);
  }
  await runner.promise;
}

main().catch((e) => {
  emit({ unavailable: `graphile-worker failed: ${e.message}` });
  process.exit(1);
});
