import type Docker from "dockerode";
import type postgres from "postgres";
import { expect } from "vitest";
import { LABEL } from "../../../../agent-host/sandbox/instance/container-labels.ts";
import { mintDevToken } from "../../../../infra/local/dev-token.ts";
import type { SplitDeployment, SplitNode } from "../../../../infra/split/start-split.ts";
import { type DrivenThread, driveThread, effectCounts, until } from "./thread-driver.ts";

// What the split e2e tests observe of the deployment: containers in Docker, rows in
// Postgres, the nodes' /readyz, the admin routes, and each thread's side-effect file.

/** Containers of `nodeId` (of one user's dirname only, if given). */
export async function containerIdsOf(
  docker: Docker,
  nodeId: string,
  only: { uidDirname?: string } = {},
): Promise<string[]> {
  const label = [`${LABEL.nodeId}=${nodeId}`];
  if (only.uidDirname !== undefined) label.push(`${LABEL.uidDirname}=${only.uidDirname}`);
  const found = await docker.listContainers({ all: true, filters: { label } });
  return found.map((c) => c.Id);
}

export async function liveSandboxRowsOf(sql: postgres.Sql, nodeId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from sandboxes
    where node_id = ${nodeId} and state in ('creating', 'running', 'destroying')`;
  return row?.n ?? -1;
}

/** Each run's tag is in its thread's file at most once, exactly once if it succeeded. */
export async function expectEffectsAtMostOnce(split: SplitDeployment, threads: DrivenThread[]) {
  for (const driven of threads) {
    const counts = await effectCounts(split, driven);
    for (const run of driven.runs) {
      const times = counts.get(run.tag) ?? 0;
      expect(times, `side effect of ${run.tag} (${run.end?.status})`).toBeLessThanOrEqual(1);
      if (run.end?.status === "succeeded") expect(times, run.tag).toBe(1);
    }
    // Every line is one of this thread's runs.
    const tags = new Set(driven.runs.map((r) => r.tag));
    expect([...counts.keys()].filter((line) => !tags.has(line))).toEqual([]);
  }
}

/** Runs `running` on `nodeId` now. */
export async function runningOn(sql: postgres.Sql, nodeId: string): Promise<string[]> {
  const rows = await sql<{ run_id: string }[]>`
    select run_id from agent_runs where status = 'running' and owner_node = ${nodeId}`;
  return rows.map((r) => r.run_id);
}

/** The data of a run's run.completed event, if it has one. */
export async function completedEvent(
  sql: postgres.Sql,
  runId: string,
): Promise<{ status?: string } | undefined> {
  const [row] = await sql<{ data: { status?: string } }[]>`
    select data from run_events where run_id = ${runId} and type = 'run.completed'`;
  return row?.data;
}

/** Starts `count` threads of `rounds` runs each (driveThread); `failed` is set if one throws. */
export function startDrive(p: {
  split: SplitDeployment;
  sql: postgres.Sql;
  users: string;
  count: number;
  rounds: number;
  /** Each run's command: append its tag, then sleep this long (default 2). */
  sleepSeconds?: number;
  deadline: number;
}) {
  const threads: DrivenThread[] = Array.from({ length: p.count }, (_, index) => ({
    index,
    uid: `${p.users}-${index}`,
    runs: [],
  }));
  const state: { failed?: unknown } = {};
  const driving = Promise.all(
    threads.map((driven) =>
      driveThread({
        split: p.split,
        sql: p.sql,
        driven,
        rounds: p.rounds,
        sleepSeconds: p.sleepSeconds ?? 2,
        deadline: p.deadline,
      }),
    ),
  );
  // A drive that fails (a run that never ends) must not leave a caller's wait hanging.
  driving.catch((error: unknown) => {
    state.failed = error;
  });
  const terminal = () => threads.flatMap((t) => t.runs).filter((r) => r.end !== undefined).length;
  return { threads, driving, state, terminal };
}

/** The node's `/readyz` status (200 ready, 503 not). */
export async function readyzStatus(node: SplitNode): Promise<number> {
  const res = await fetch(`${node.dataPlaneUrl}/readyz`, { signal: AbortSignal.timeout(10_000) });
  await res.body?.cancel();
  return res.status;
}

export async function awaitReadyz(node: SplitNode, status: 200 | 503, deadline: number) {
  await until(
    `${node.nodeId}'s /readyz answers ${status}`,
    deadline,
    async () => (await readyzStatus(node)) === status,
  );
}

/** `POST /v1/admin/nodes/{id}/quiesce|resume` with an admin token; waits for its /readyz. */
export async function setNodeState(
  split: SplitDeployment,
  node: SplitNode,
  action: "quiesce" | "resume",
  deadline: number,
) {
  const token = await mintDevToken(split.devJwtSecret, "split-operator", { admin: true });
  const res = await fetch(`${split.functionsUrl}/v1/admin/nodes/${node.nodeId}/${action}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(30_000),
  });
  expect(res.status, await res.text()).toBe(202);
  await awaitReadyz(node, action === "quiesce" ? 503 : 200, deadline);
}

/**
 * What the node's Docker holds that Postgres does not explain: containers of `nodeId`
 * without a `running` sandbox row of that node and generation (a warm sandbox kept for
 * the next turn has one), plus the node's rows stuck `creating` or `destroying`.
 */
export async function unexplainedOf(docker: Docker, sql: postgres.Sql, nodeId: string) {
  const containers = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL.nodeId}=${nodeId}`] },
  });
  const rows = await sql<{ sandbox_id: string; generation: number; state: string }[]>`
    select sandbox_id, generation, state from sandboxes
    where node_id = ${nodeId} and state in ('creating', 'running', 'destroying')`;
  const live = new Set(
    rows.filter((r) => r.state === "running").map((r) => `${r.sandbox_id}/${r.generation}`),
  );
  return {
    containers: containers
      .filter((c) => !live.has(`${c.Labels[LABEL.sandboxId]}/${c.Labels[LABEL.generation]}`))
      .map((c) => ({ id: c.Id, uidDirname: c.Labels[LABEL.uidDirname] })),
    rows: rows.filter((r) => r.state !== "running"),
  };
}
