// The cost of growth on one node (issue 19): U concurrent users, each holding a 5-turn
// conversation of `true` (a new thread, then its turns one after another, each submitted
// when the previous one ended, as a chat client does), on the local Workcell with its
// run worker and the node's default sandbox tier. For U = 1, 8, 32 and 128 it prints the
// p50 and p99 turn latency (submit → run.completed, over every turn of every user) and
// the runs per second over the whole round, next to U = 1 as the baseline of the same run.
//
// The first turn of each conversation creates the thread's sandbox; the others find it
// warm (keep-warm window, decision 0030). The run worker takes `concurrency` runs at once
// (DEFAULT_RUN_WORKER_LIMITS), so beyond it turns queue: the p99 shows that queue.
import Docker from "dockerode";
import { DEFAULT_RUN_WORKER_LIMITS } from "../../agent-host/runs/run-limits.ts";
import { type Api, startBenchStack } from "./local-stack-bench.ts";
import { benchTargets } from "./measure.ts";

const USERS = (process.env.BENCH_USERS ?? "1,8,32,128").split(",").map(Number);
const TURNS = 5;
// No target is set for this table (issue 19 asked for the figures); issue 41's throughput
// targets (item 3) are run-throughput.bench.ts's.
benchTargets("run-scaling", [{ measure: "scaling-table", op: "<=", target: 1 }]).skip(
  "scaling-table",
  "informational: no target is set for this bench",
);

type Round = { users: number; p50: number; p99: number; runsPerSecond: number; runs: number };

const docker = new Docker();
const bench = await startBenchStack(docker, "scale-warmup");
try {
  // One untimed conversation: JIT, connections, the first image use.
  await conversation(bench.api);
  const rounds: Round[] = [];
  for (const users of USERS) {
    const apis = await Promise.all(
      Array.from({ length: users }, (_, i) => bench.apiFor(`scale-${users}-${i}`)),
    );
    const started = performance.now();
    const turns = (await Promise.all(apis.map(conversation))).flat();
    const seconds = (performance.now() - started) / 1000;
    turns.sort((a, b) => a - b);
    const at = (q: number) => turns[Math.min(turns.length - 1, Math.floor(q * turns.length))] ?? 0;
    rounds.push({
      users,
      p50: at(0.5),
      p99: at(0.99),
      runsPerSecond: turns.length / seconds,
      runs: turns.length,
    });
  }
  const base = rounds[0] as Round;
  console.log(
    `\n## ${TURNS}-turn conversations of \`true\` on one node (run worker concurrency ${DEFAULT_RUN_WORKER_LIMITS.concurrency})`,
  );
  console.log("users  runs   p50 turn    p99 turn    runs/s   p50 / 1 user  runs/s / 1 user");
  for (const r of rounds) {
    console.log(
      `${String(r.users).padStart(5)}  ${String(r.runs).padStart(4)}  ${r.p50.toFixed(0).padStart(7)} ms  ${r.p99.toFixed(0).padStart(7)} ms  ${r.runsPerSecond.toFixed(2).padStart(7)}  ${(r.p50 / base.p50).toFixed(2).padStart(11)}x  ${(r.runsPerSecond / base.runsPerSecond).toFixed(2).padStart(14)}x`,
    );
  }
} finally {
  await bench.stop();
}

/** A new thread and TURNS turns of `true` in it; each turn's submit → terminal in ms. */
async function conversation(api: Api): Promise<number[]> {
  const { threadId } = await api.newThread();
  const times: number[] = [];
  for (let turn = 0; turn < TURNS; turn++) {
    const run = await api.run(threadId, "true");
    if (run.status !== "succeeded") {
      throw new Error(`a turn ended ${run.status}: ${JSON.stringify(run.error)}`);
    }
    times.push(run.terminalMs);
  }
  return times;
}
