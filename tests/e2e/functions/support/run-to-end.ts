import { expect } from "vitest";
import type { Run } from "../../../../shared/contracts/index.ts";
import { readSse } from "../../../integration/functions/support/sse.ts";

/** Reads a run's event stream to its end (the terminal event), then the run. */
export async function runToEnd(url: string, token: string, runId: string): Promise<Run> {
  const headers = { authorization: `Bearer ${token}` };
  const stream = await fetch(`${url}/v1/runs/${runId}/events`, { headers });
  if (stream.body === null) throw new Error("no event stream");
  const { ended } = await readSse(stream.body);
  expect(ended).toBe(true);
  return (await (await fetch(`${url}/v1/runs/${runId}`, { headers })).json()) as Run;
}
