// A process that takes a manual checkpoint under the Workdir's Execution Lease and stops
// dead while it holds it, so the test can kill -9 it there the way an agent-host dies
// (tests/integration/checkpoints/manual-checkpoint-lease.test.ts).

import postgres from "postgres";
import { createCheckpointStore } from "../../../agent-host/checkpoints/checkpoint-store.ts";
import { createCheckpointSyscalls } from "../../../agent-host/checkpoints/checkpoint-syscalls.ts";
import { Checkpoints } from "../../../agent-host/checkpoints/checkpoints.ts";
import { createLibcSyscalls, createPathResolver } from "../../../agent-host/workspace/index.ts";
import { createDb } from "../../../shared/db/client.ts";
import { testLogger } from "../../support/test-logger.ts";

type Args = {
  databaseUrl: string;
  dataRoot: string;
  uid: string;
  threadId: string;
  workdirPath: string;
  ttlMs: number;
};

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const sys = createLibcSyscalls();
const client = postgres(args.databaseUrl, { max: 2, onnotice: () => {} });
// Keeps the process (and so its lease renewals) alive until the kill.
setInterval(() => {}, 1_000);
const checkpoints = new Checkpoints({
  db: createDb(client),
  store: createCheckpointStore({
    dataRoot: args.dataRoot,
    sys,
    resolver: createPathResolver(sys),
    cp: createCheckpointSyscalls(),
    mode: "copy",
    maxEntries: 100_000,
    maxDepth: 64,
  }),
  nodeId: "node-killed",
  // Read under the lease, before the copy: where this process stops.
  workspaceBytes: async () => {
    process.stdout.write(`${JSON.stringify({ event: "holding" })}\n`);
    return new Promise<number>(() => {}); // holds the lease (renewing it) until the kill
  },
  defaultWorkspaceBytes: 1024 ** 3,
  lease: { ttlMs: args.ttlMs, waitMs: 30_000, pollIntervalMs: 100 },
  logger: testLogger(),
});
await checkpoints.takeUnderLease(
  { uid: args.uid, threadId: args.threadId, workdirPath: args.workdirPath },
  { source: "manual" },
  AbortSignal.timeout(60_000),
);
