import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type DataRoot = { path: string; remove(): Promise<void> };

/** A fresh agent-host data root (users/, skills/ …) for one test. */
export async function freshDataRoot(): Promise<DataRoot> {
  const path = await mkdtemp(join(tmpdir(), "workcell-data-"));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}
