import type Docker from "dockerode";
import type postgres from "postgres";
import type { SplitDeployment, SplitNode } from "../../../../infra/split/start-split.ts";
import { containerIdsOf, runningOn, startDrive } from "./split-checks.ts";
import { midToolRunsOn, until } from "./thread-driver.ts";

/**
 * Drives `threads` × `rounds` runs; once `lossAfterTerminal` are terminal and `victim` is
 * in the middle of a command, calls `lose(victim)`. Returns the threads, the moment of
 * the loss and the runs that were running on the victim when it went.
 */
export async function driveAndLose(p: {
  split: SplitDeployment;
  sql: postgres.Sql;
  docker: Docker;
  users: string;
  threads: number;
  rounds: number;
  /** How many runs are terminal before the loss (so every thread has runs left). */
  lossAfterTerminal: number;
  /** The whole drive's bound: generous, a bound on a hang, not a measurement. */
  boundMs: number;
  victim: SplitNode;
  lose: (victim: SplitNode) => Promise<void>;
}) {
  const { sql, victim } = p;
  const deadline = performance.now() + p.boundMs;
  const drive = startDrive({
    split: p.split,
    sql,
    users: p.users,
    count: p.threads,
    rounds: p.rounds,
    deadline,
  });
  const { threads, driving } = drive;
  await until(
    `${victim.nodeId} runs a command after ${p.lossAfterTerminal} runs`,
    deadline,
    async () => {
      if (drive.state.failed !== undefined) throw drive.state.failed;
      return (
        drive.terminal() >= p.lossAfterTerminal &&
        (await midToolRunsOn(sql, victim.nodeId)).length > 0
      );
    },
  );
  const containersAtLoss = await containerIdsOf(p.docker, victim.nodeId);
  const lostAt = performance.now();
  await p.lose(victim);
  // The process is gone: what it had claimed is final now.
  const inFlight = await runningOn(sql, victim.nodeId);
  return { threads, driving, lostAt, inFlight, containersAtLoss };
}
