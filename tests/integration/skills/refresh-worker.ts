// A second agent-host process, as far as skills go: refreshes one uid's projection in a
// loop until a stop file appears, then once more, and records when it held the flock.
// Started with `node` by projection-concurrency.test.ts (two at a time).
//
// argv: <database url> <data root> <uid> <stop file> <marker file> <log file> [hold ms]
import { appendFileSync, closeSync, existsSync, openSync, unlinkSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";
import postgres from "postgres";
import { createProjectionRefresher } from "../../../agent-host/skills/projection-refresher.ts";
import { createLibcSyscalls } from "../../../agent-host/workspace/libc-syscalls.ts";
import { createDb } from "../../../shared/db/client.ts";

const [databaseUrl, dataRoot, uid, stopFile, markerFile, logFile, hold] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string | undefined,
];
// Stay inside the lock a while, so that without mutual exclusion an overlap is certain.
const holdMs = Number(hold ?? 0);
const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
const now = () => performance.timeOrigin + performance.now();
const refresher = createProjectionRefresher({
  db: createDb(sql),
  sys: createLibcSyscalls(),
  dataRoot,
  logger: pino({ level: "silent" }),
  hooks: {
    async onLocked() {
      // O_EXCL: if the other process were inside too, the marker would already exist.
      try {
        closeSync(openSync(markerFile, "wx"));
      } catch {
        appendFileSync(logFile, `${process.pid} overlap ${now()}\n`);
      }
      appendFileSync(logFile, `${process.pid} locked ${now()}\n`);
      if (holdMs > 0) await sleep(holdMs);
    },
    onUnlocking() {
      appendFileSync(logFile, `${process.pid} unlocking ${now()}\n`);
      unlinkSync(markerFile);
    },
  },
});

let refreshes = 0;
let failures = 0;
for (;;) {
  const last = existsSync(stopFile);
  const outcome = await refresher.refresh(uid, AbortSignal.timeout(60_000));
  refreshes++;
  if (!outcome.ok) failures++;
  if (last) break;
}
appendFileSync(logFile, `${process.pid} done ${refreshes} ${failures}\n`);
await sql.end();
