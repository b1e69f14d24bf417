// A process that restores a checkpoint and stops dead at one step, so the test can kill -9
// it there (tests/integration/checkpoints/restore-crash.test.ts).

import { createCheckpointStore } from "../../../agent-host/checkpoints/checkpoint-store.ts";
import { createCheckpointSyscalls } from "../../../agent-host/checkpoints/checkpoint-syscalls.ts";
import { restoreWorkdir } from "../../../agent-host/checkpoints/restore-workdir.ts";
import { detectSubvolumes } from "../../../agent-host/checkpoints/subvolumes.ts";
import { createLibcSyscalls, createPathResolver } from "../../../agent-host/workspace/index.ts";

type Args = {
  dataRoot: string;
  mode: "reflink" | "copy";
  uid: string;
  workdirPath: string;
  checkpointId: string;
  restoreId: string;
  stopAt: string;
};

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const sys = createLibcSyscalls();
// A btrfs data root: the Workdir is a subvolume and the restore stages inside it.
const subvolumes = detectSubvolumes({ dataRoot: args.dataRoot, sys }, "checkpoints");
const store = createCheckpointStore({
  dataRoot: args.dataRoot,
  sys,
  resolver: createPathResolver(sys),
  cp: createCheckpointSyscalls(),
  mode: args.mode,
  maxEntries: 100_000,
  maxDepth: 64,
  ...(subvolumes === undefined ? {} : { subvolumes }),
});
const forever = new Int32Array(new SharedArrayBuffer(4));
await restoreWorkdir(store, args, AbortSignal.timeout(60_000), (step) => {
  if (step !== args.stopAt) return;
  process.stdout.write(`${JSON.stringify({ event: "stopped", step })}\n`);
  Atomics.wait(forever, 0, 0); // blocks this (only) thread until the kill
});
process.stdout.write(`${JSON.stringify({ event: "done" })}\n`);
