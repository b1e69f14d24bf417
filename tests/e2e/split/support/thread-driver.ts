import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type postgres from "postgres";
import { mintDevToken } from "../../../../infra/local/dev-token.ts";
import type { SplitDeployment } from "../../../../infra/split/start-split.ts";
import type { Run, Thread } from "../../../../shared/contracts/index.ts";
import { uidDirname } from "../../../../shared/paths/uid-dirname.ts";
import {
  type ChatServer,
  openStream,
  send,
  startChatServer,
  textChunk,
  toolChunk,
} from "../../../integration/agent/chat-server.ts";
import { pollFor, pollUntil } from "../../../support/poll-until.ts";

/** The file in each thread's Workdir that every run appends its own tag to (the side effect). */
export const EFFECTS_FILE = "effects.log";
/** Between polls of a run's row while awaiting its end. */
const POLL_MS = 150;

export type RunRecord = {
  readonly tag: string;
  readonly runId: string;
  readonly threadIndex: number;
  /** performance.now() when the run was accepted (202). */
  readonly submittedAt: number;
  /** Filled once the run is terminal. */
  end?: { status: string; errorCode: string | undefined; ownerNode: string | null; at: number };
};

export type DrivenThread = {
  readonly index: number;
  readonly uid: string;
  thread?: Thread;
  readonly runs: RunRecord[];
};

type RunRow = { status: string; error: { code?: string } | null; owner_node: string | null };

const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);

/** The run's row once it is terminal, or a failure after `deadline` (performance.now()). */
export async function awaitTerminal(
  sql: postgres.Sql,
  runId: string,
  deadline: number,
): Promise<RunRow> {
  const row = await pollFor(
    async () =>
      (
        await sql<RunRow[]>`
        select status, error, owner_node from agent_runs where run_id = ${runId}`
      )[0],
    (r) => r !== undefined && TERMINAL.has(r.status),
    {
      what: `run ${runId} to end`,
      deadlineAt: deadline,
      intervalMs: POLL_MS,
      detail: (r) => `still ${r?.status ?? "missing"}`,
    },
  );
  if (row === undefined) throw new Error(`run ${runId} is missing`);
  return row;
}

async function post<T>(url: string, token: string, body: unknown): Promise<T> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  if (res.status !== 202) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/**
 * One conversation as a user has it: submit a run, await its end, submit the next, for
 * `rounds` runs. Each run's command appends its own tag to EFFECTS_FILE in the thread's
 * Workdir, then sleeps `sleepSeconds` (so a node can be lost while it runs).
 */
export async function driveThread(p: {
  split: SplitDeployment;
  sql: postgres.Sql;
  driven: DrivenThread;
  rounds: number;
  sleepSeconds: number;
  deadline: number;
}): Promise<void> {
  const token = await mintDevToken(p.split.devJwtSecret, p.driven.uid);
  for (let round = 0; round < p.rounds; round++) {
    const tag = `t${p.driven.index}-r${round}-${randomBytes(4).toString("hex")}`;
    const input = `echo ${tag} >> ${EFFECTS_FILE} && sleep ${p.sleepSeconds}`;
    let run: Run;
    if (p.driven.thread === undefined) {
      const out = await post<{ run: Run; thread: Thread }>(
        `${p.split.functionsUrl}/v1/runs`,
        token,
        // The container tier, named: these tests cut nodes off their Docker engine (the
        // default is the process tier where both are ready, decision 0106).
        { input, agent: { sandbox: "container" } },
      );
      p.driven.thread = out.thread;
      run = out.run;
    } else {
      run = await post<Run>(
        `${p.split.functionsUrl}/v1/threads/${p.driven.thread.thread_id}/runs`,
        token,
        { input, agent: { sandbox: "container" } },
      );
    }
    const record: RunRecord = {
      tag,
      runId: run.run_id,
      threadIndex: p.driven.index,
      submittedAt: performance.now(),
    };
    p.driven.runs.push(record);
    const row = await awaitTerminal(p.sql, run.run_id, p.deadline);
    record.end = {
      status: row.status,
      errorCode: row.error?.code,
      ownerNode: row.owner_node,
      at: performance.now(),
    };
  }
}

/** How many times each tag is in the thread's EFFECTS_FILE (read from the shared data root). */
export async function effectCounts(
  split: SplitDeployment,
  driven: DrivenThread,
): Promise<Map<string, number>> {
  if (driven.thread === undefined) throw new Error(`thread ${driven.index} was never created`);
  const file = join(
    split.dataRoot,
    "users",
    uidDirname(driven.uid),
    "workspace",
    driven.thread.workdir_path,
    EFFECTS_FILE,
  );
  const counts = new Map<string, number>();
  const text = await readFile(file, "utf8");
  for (const line of text.split("\n").filter((l) => l.length > 0)) {
    counts.set(line, (counts.get(line) ?? 0) + 1);
  }
  return counts;
}

/** Runs that are `running` on `nodeId` and whose tool has started (mid-command). */
export async function midToolRunsOn(sql: postgres.Sql, nodeId: string): Promise<string[]> {
  const rows = await sql<{ run_id: string }[]>`
    select r.run_id from agent_runs r
    where r.status = 'running' and r.owner_node = ${nodeId}
      and exists (select 1 from run_events e where e.run_id = r.run_id and e.type = 'tool.started')`;
  return rows.map((r) => r.run_id);
}

/** Awaits `condition` (polled), failing with `what` after `deadline` (performance.now()). */
export function until(
  what: string,
  deadline: number,
  condition: () => Promise<boolean> | boolean,
): Promise<void> {
  return pollUntil(condition, { what, deadlineAt: deadline, intervalMs: POLL_MS });
}

/**
 * The LLM of the deployment, over the real Chat Completions wire protocol: asked about a
 * user message it calls `bash` with that message as the command; given the call's result
 * it ends the turn. So each run's input is exactly the one command it runs.
 */
export function startCommandModel(): Promise<ChatServer> {
  return startChatServer((request, res) => {
    const last = (request.body.messages as { role: string; content: string }[]).at(-1);
    openStream(res);
    if (last?.role === "tool") {
      send(res, textChunk("done", "stop"));
    } else {
      const command = last?.content ?? "false";
      send(
        res,
        toolChunk(
          [{ index: 0, id: "call_1", name: "bash", arguments: JSON.stringify({ command }) }],
          "tool_calls",
        ),
      );
    }
    send(res, "[DONE]");
    res.end();
  });
}
