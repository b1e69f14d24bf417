import type { Logger } from "pino";
import { createAddressGuard } from "../../../../agent-host/egress/address-guard.ts";
import { createEgressProxy, type EgressProxy } from "../../../../agent-host/egress/egress-proxy.ts";
import type { EgressAudit } from "../../../../agent-host/egress/egress-record.ts";
import { createRunEgressOpener } from "../../../../agent-host/egress/run-egress.ts";
import type { ModelRequest } from "../../../../agent-host/runs/agent/model-client.ts";
import type { NodeSecrets } from "../../../../agent-host/secrets/node-secrets.ts";
import { NO_NETWORK } from "../../../../shared/network/network-policy.ts";
import { findNetworkCeiling } from "../../../../shared/network/network-policy-store.ts";
import type { RunWorld } from "../../runs/run-harness.ts";
import type { scriptedModels } from "../../runs/scripted-models.ts";
import { silentLogger } from "../../sandbox/sandbox-fixture.ts";

/** What a test may change in the worker's network wiring. */
export type EgressWorkerOptions = {
  /** Where the proxy's flows are recorded; default nowhere. */
  audit?: EgressAudit;
  /** The opener's logger; default silent (a test that reads the logs passes its own). */
  logger?: Logger;
  /** The node's secrets: the proxy intercepts bound hosts and commands get placeholders. */
  secrets?: NodeSecrets;
};

/**
 * The worker of a run world with its network wired as a node wires it: one egress proxy
 * whose ceiling is read from the world's database, and the run egress opener (process tier,
 * 1 MB per run). Returns the proxy, for the caller to close.
 */
export async function startEgressWorker(
  world: RunWorld,
  models: ReturnType<typeof scriptedModels>,
  options: EgressWorkerOptions = {},
): Promise<EgressProxy> {
  const { secrets } = options;
  const proxy = createEgressProxy({
    ceiling: (uid) => findNetworkCeiling(world.db, uid, NO_NETWORK),
    guard: createAddressGuard(),
    audit: options.audit ?? (() => {}),
    ...(secrets ? { interception: secrets.interception } : {}),
  });
  await world.worker({
    model: models.factory,
    extra: {
      egress: createRunEgressOpener({
        db: world.db,
        logger: options.logger ?? silentLogger,
        networkDefault: NO_NETWORK,
        proxy,
        processStateDir: world.childTier.process?.stateDir,
        containerEgressRoot: undefined,
        bytesPerRun: 1_000_000,
        policyTimeoutMs: 5_000,
        ...(secrets ? { secrets: { source: secrets.source, caBundle: secrets.caBundle } } : {}),
      }),
    },
  });
  return proxy;
}

/**
 * A scripted model's last step that keeps the system prompt the run's model got (by run id,
 * in `prompts`) and answers `content`: how a test reads what a run was told about its network.
 */
export function keepPromptAndAnswer(prompts: Map<string, string>, runId: string, content: string) {
  return {
    respond: async (model: ModelRequest) => {
      prompts.set(runId, String(model.messages[0]?.content ?? ""));
      return {
        ok: true as const,
        turn: {
          message: { role: "assistant" as const, content, toolCalls: [] },
          finishReason: "stop" as const,
        },
      };
    },
  };
}
