// Checkpoints (issue 39): a warm next turn with before-run checkpoints on against off, in
// reflink mode (target ≤ 1.15). The real local stack (PostgreSQL, fauxqs, the agent-host
// with its run worker and Docker sandboxes) runs with its DATA_DIR on an XFS loop
// filesystem with reflink=1 (tests/support/xfs-loop.ts; needs root and xfsprogs, SKIPPED
// otherwise). The thread's Workdir holds the checkpoint bench's tree (1,000 files, 100 MB);
// each turn runs `true` (shell model) in the thread's kept-warm container, with
// `agent.checkpoint` true or false, the two interleaved round by round so that the
// machine's load falls on both alike. A checkpoint is pruned beyond
// max_checkpoints_per_thread (20), so the store stays bounded through the series.
import { chmodSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import Docker from "dockerode";
import { xfsLoopDataRoot } from "../support/xfs-loop.ts";
import { type RunTimes, startBenchStack } from "./local-stack-bench.ts";
import { benchTargets, interleaved, report } from "./measure.ts";

const ROUNDS = 15;
const UID = "bench";
const FILES = 1000;
const FILE_BYTES = 100 * 1024;
const targets = benchTargets("checkpoints", [
  { measure: "warm-turn-checkpoint-on-vs-off", op: "<=", target: 1.15 },
]);

let xfs: Awaited<ReturnType<typeof xfsLoopDataRoot>> | undefined;
try {
  xfs = await xfsLoopDataRoot(4 * 1024 ** 3);
} catch (error) {
  targets.skip(
    "warm-turn-checkpoint-on-vs-off",
    `no XFS loop filesystem: ${(error as Error).message.split("\n")[0]}`,
  );
}
if (xfs !== undefined) {
  const docker = new Docker();
  try {
    // The local PostgreSQL runs as its own user and must reach DATA_DIR/postgres: the loop
    // mount and its temp parent are made 0700.
    chmodSync(dirname(xfs.path), 0o755);
    chmodSync(xfs.path, 0o755);
    const bench = await startBenchStack(docker, UID, { dataParent: xfs.path });
    try {
      const { api } = bench;
      const { threadId } = await api.newThread();
      const ok = async (times: Promise<RunTimes>, label: string) => {
        const done = await times;
        if (done.status !== "succeeded") {
          throw new Error(`a ${label} run ended ${done.status}: ${JSON.stringify(done.error)}`);
        }
        return done;
      };
      // The Workdir's tree, written by a run in the sandbox (untimed); it also warms it.
      await ok(
        api.run(
          threadId,
          `for d in 0 1 2 3 4 5 6 7 8 9; do mkdir -p d$d; i=0; while [ $i -lt ${FILES / 10} ]; do head -c ${FILE_BYTES} /dev/zero > d$d/f$i; i=$((i+1)); done; done`,
          { checkpoint: false },
        ),
        "setup",
      );
      // Each turn checks that a checkpoint was taken exactly when asked (its event).
      const turn = (checkpoint: boolean) => async () => {
        let created = 0;
        const started = await api.start(
          threadId,
          "true",
          (type) => {
            if (type === "checkpoint.created") created++;
          },
          { checkpoint },
        );
        await ok(started.events, checkpoint ? "checkpoint" : "plain");
        if (created !== (checkpoint ? 1 : 0)) {
          throw new Error(`checkpoint ${checkpoint}: ${created} checkpoint.created events`);
        }
      };
      const [off, on] = await interleaved(
        [
          ["warm next turn, before-run checkpoint off (baseline)", turn(false)],
          ["warm next turn, before-run checkpoint on (reflink)", turn(true)],
        ],
        ROUNDS,
      );
      if (off === undefined || on === undefined) throw new Error("no samples");
      report("warm next turn, checkpoint on vs off (reflink mode)", off, [on]);
      // How many store directories the checkpoints took: a turn that changed nothing names
      // the previous checkpoint's directory (decision 0171), so expect one or two.
      console.log(`store directories after the series: ${storeDirectories(xfs.path)}`);
      targets.record("warm-turn-checkpoint-on-vs-off", on.medianMs / off.medianMs);
    } finally {
      await bench.stop();
    }
  } finally {
    await xfs.remove();
  }
}

/** Checkpoint directories in every `checkpoints/<uid>/` beside a `users/` below `top`. */
function storeDirectories(top: string, depth = 0): number {
  const names = readdirSync(top, { withFileTypes: true }).filter((e) => e.isDirectory());
  if (names.some((e) => e.name === "users") && names.some((e) => e.name === "checkpoints")) {
    const store = join(top, "checkpoints");
    return readdirSync(store).reduce((n, uid) => n + readdirSync(join(store, uid)).length, 0);
  }
  if (depth >= 3) return 0;
  return names.reduce((n, e) => n + storeDirectories(join(top, e.name), depth + 1), 0);
}
