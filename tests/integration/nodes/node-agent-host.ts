import { generateKeyPair } from "jose";
import { type AgentHost, startAgentHost } from "../../../agent-host/agent-host.ts";
import { modelConfigSchema } from "../../../agent-host/runs/agent/model-config.ts";
import type { SandboxTierSet } from "../../../agent-host/sandbox/detect-sandbox-tiers.ts";
import type { SandboxConfig } from "../../../agent-host/sandbox/sandbox-config.ts";
import { postgresListen } from "../../../shared/listen/postgres-listen.ts";
import { freePort } from "../../setup/free-port.ts";
import { freshBucket, s3Client } from "../../support/aws.ts";
import type { FunctionsHarness } from "../functions/support/functions-harness.ts";
import { silentLogger } from "../sandbox/sandbox-fixture.ts";

/**
 * A real agent-host on the functions harness's database, queue and data root, as the node
 * tests start it: the shell model, a fresh bucket, its own capability key, a fast node
 * heartbeat (200 ms) so the admin routes see it at once, and the tiers the test detected.
 */
export async function startNodeAgentHost(
  h: FunctionsHarness,
  p: { nodeId: string; config: SandboxConfig; sandboxTiers: SandboxTierSet },
): Promise<AgentHost> {
  const { publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const s3 = s3Client();
  return startAgentHost({
    db: h.db,
    listen: postgresListen(h.database.sql),
    sqs: h.sqs,
    runQueueUrl: h.queueUrl,
    s3,
    attachmentsBucket: await freshBucket(s3),
    dataRoot: h.dataRoot,
    nodeId: p.nodeId,
    capabilityPublicKeys: [publicKey],
    sandboxTiers: p.sandboxTiers,
    sandboxConfig: p.config,
    modelConfig: modelConfigSchema.parse({ kind: "shell" }),
    dataPlane: { port: await freePort(), hostname: "127.0.0.1" },
    nodeHeartbeatIntervalMs: 200,
    logger: silentLogger,
  });
}
