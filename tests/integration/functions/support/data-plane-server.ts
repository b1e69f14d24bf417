import { decodeJwt, type JWK } from "jose";
import pino, { type Logger } from "pino";
import {
  createDataPlaneApp,
  startDataPlaneServer,
  type ThreadRevocations,
} from "../../../../agent-host/data-plane/index.ts";
import { createAccountingQuota } from "../../../../agent-host/quota/workspace-quota.ts";
import type { AgentHostSkills } from "../../../../agent-host/skills/agent-host-skills.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../../agent-host/workspace/index.ts";
import { importCapabilityPublicKey } from "../../../../shared/capability/capability-keys.ts";
import { ed25519PublicJwkVar } from "../../../../shared/env/env-vars.ts";
import type { Tracing } from "../../../../shared/telemetry/tracing.ts";

export type SeenCapability = { path: string; uid: unknown; workdirPath: unknown; ops: unknown };

export type TestDataPlane = {
  url: string;
  /** Capabilities the data plane received, decoded (to assert their scope). */
  seen: SeenCapability[];
  close(): Promise<void>;
};

/**
 * The real agent-host data plane (agent-host/data-plane) over a real data root, on a free
 * port. Requests are only observed on the way in, never altered.
 */
export async function startTestDataPlane(p: {
  dataRoot: string;
  publicJwk: JWK;
  /** The revocation point, as the agent-host wires it (over the harness's Postgres). */
  revocations?: ThreadRevocations;
  /** Its logger (default silent) and tracing (default off), to observe propagation. */
  logger?: Logger;
  tracing?: Tracing;
  /** The agent-host's skills handlers, to serve the skills routes (default: 503 there). */
  skills?: AgentHostSkills;
}): Promise<TestDataPlane> {
  const sys = createLibcSyscalls();
  const app = createDataPlaneApp({
    quota: createAccountingQuota({ dataRoot: p.dataRoot, maxUsageAgeMs: 0 }),
    userWorkspaces: createUserWorkspaces({
      dataRoot: p.dataRoot,
      sys,
      resolver: createPathResolver(sys, { kind: "openat2" }),
    }),
    publicKeys: [
      await importCapabilityPublicKey(ed25519PublicJwkVar().parse(JSON.stringify(p.publicJwk))),
    ],
    logger: p.logger ?? pino({ level: "silent" }),
    ...(p.tracing === undefined ? {} : { tracing: p.tracing }),
    ...(p.revocations === undefined ? {} : { revocations: p.revocations }),
    ...(p.skills === undefined ? {} : { skills: p.skills }),
  });
  const seen: SeenCapability[] = [];
  const server = await startDataPlaneServer({
    port: 0,
    app: {
      fetch: (request: Request) => {
        const token = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1];
        if (token !== undefined) {
          const claims = decodeJwt(token);
          seen.push({
            path: new URL(request.url).pathname,
            uid: claims.uid,
            workdirPath: claims.workdir_path,
            ops: claims.ops,
          });
        }
        return app.fetch(request);
      },
    },
  });
  return { url: server.url, seen, close: () => server.close() };
}
