import { createRunQuotaGate } from "../../../agent-host/quota/run-quota-gate.ts";
import { createAccountingQuota } from "../../../agent-host/quota/workspace-quota.ts";
import { silentLogger } from "../sandbox/sandbox-fixture.ts";
import type { RunWorld } from "./run-harness.ts";
import { scriptedModels } from "./scripted-models.ts";

/**
 * The quota suites' worker: the accounting mode's gate over a real accounting of the data
 * root (the gate create-run-worker.ts wires), and runs whose model calls bash with `command`, then
 * with `touch marker` (the next command, refused or not), then ends. Returns the models.
 */
export async function startQuotaWorker(world: RunWorld, command: string) {
  const models = scriptedModels(() => [
    { toolCalls: [{ name: "bash", arguments: { command } }] },
    { toolCalls: [{ name: "bash", arguments: { command: "touch marker; echo touched" } }] },
    { text: "done" },
  ]);
  const accounting = createAccountingQuota({ dataRoot: world.dataRoot.path });
  await world.worker({
    model: models.factory,
    extra: { quota: createRunQuotaGate({ db: world.db, accounting, logger: silentLogger }) },
  });
  return models;
}
