// The egress proxy in a process of its own, for egress-proxy.bench.ts: as on a node, the
// proxy (agent-host) and the clients (in sandboxes) do not share an event loop. Args: a
// JSON {dbUrl, dir, sandboxes}. Prints {paths} once listening; then answers each stdin
// line with {rss, cpuMicros} and exits when stdin closes.
import { join } from "node:path";
import { cpuUsage, memoryUsage } from "node:process";
import { createInterface } from "node:readline";
import postgres from "postgres";
import { createAddressGuard } from "../../agent-host/egress/address-guard.ts";
import { createEgressProxy } from "../../agent-host/egress/egress-proxy.ts";
import { createDb } from "../../shared/db/client.ts";
import { NO_NETWORK } from "../../shared/network/network-policy.ts";
import { findNetworkCeiling } from "../../shared/network/network-policy-store.ts";

const args = JSON.parse(process.argv[2] ?? "{}") as {
  dbUrl: string;
  dir: string;
  sandboxes: number;
};
const sql = postgres(args.dbUrl, { max: 10, onnotice: () => {} });
const db = createDb(sql);
const proxy = createEgressProxy({
  ceiling: (uid) => findNetworkCeiling(db, uid, NO_NETWORK),
  guard: createAddressGuard(),
  audit: () => {},
});
const opened = await Promise.all(
  Array.from({ length: args.sandboxes }, (_, i) =>
    proxy.open(
      {
        uid: "bench",
        runId: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
        sandboxId: `bench-${i}`,
        generation: 1,
      },
      1e12,
      args.dir,
    ),
  ),
);
// By name (listenPath is this process's /proc/self/fd path).
process.stdout.write(
  `${JSON.stringify({ paths: opened.map((o) => join(args.dir, o.relativePath)) })}\n`,
);
const lines = createInterface({ input: process.stdin });
lines.on("line", () => {
  process.stdout.write(
    `${JSON.stringify({ rss: memoryUsage().rss, cpuMicros: Object.values(cpuUsage()).reduce((a, b) => a + b, 0) })}\n`,
  );
});
lines.on("close", async () => {
  await proxy.close();
  await sql.end({ timeout: 5 });
  process.exit(0);
});
