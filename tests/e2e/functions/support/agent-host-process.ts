import { join } from "node:path";
import { LABEL } from "../../../../agent-host/sandbox/instance/container-labels.ts";
import { freePort } from "../../../setup/free-port.ts";
import { type DataRoot, freshDataRoot } from "../../../support/data-root.ts";
import { removeContainersLabelled, requireDocker } from "../../../support/docker.ts";
import { type ServerProcess, startServerProcess } from "./server-process.ts";

const ROOT = join(import.meta.dirname, "../../../..");

export type AgentHostProcess = ServerProcess & { nodeId: string };

/**
 * agent-host/main.ts as its own process, configured only by its environment, against the
 * same database, queue and bucket as a functions entry started from `functionsVars`
 * (tests/support/functions-entry-env.ts): the run worker and data plane of a deployment.
 * `url` is its data plane. stop() ends it, then removes its sandboxes and data root.
 */
export async function startAgentHostProcess(p: {
  functionsVars: Record<string, string>;
  /** The sandbox image (the test's `inject("sandboxImage")`). */
  image: string;
  /** Which node this is; also names its sandboxes' label (removed in stop()). */
  nodePrefix: string;
  /** More variables (OTEL_*, MODEL_*), over the defaults. */
  env?: Record<string, string>;
}): Promise<AgentHostProcess> {
  const vars = p.functionsVars;
  const dataRoot: DataRoot = await freshDataRoot();
  const dataPlanePort = await freePort();
  // The public half of the entry's capability key: data-plane tokens minted there verify here.
  const { d: _private, ...publicJwk } = JSON.parse(vars.CAPABILITY_PRIVATE_KEY ?? "{}");
  const nodeId = `${p.nodePrefix}-${dataPlanePort}`;
  const removeLeftovers = async () => {
    await removeContainersLabelled(requireDocker().docker, LABEL.nodeId, nodeId);
    await dataRoot.remove();
  };
  let server: ServerProcess;
  try {
    server = await startServerProcess({
      command: process.execPath,
      args: [join(ROOT, "agent-host/main.ts")],
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: vars.DATABASE_URL,
        RUN_QUEUE_URL: vars.RUN_QUEUE_URL,
        ATTACHMENTS_BUCKET: vars.ATTACHMENTS_BUCKET,
        AWS_REGION: vars.AWS_REGION,
        AWS_ENDPOINT_URL: vars.AWS_ENDPOINT_URL,
        AWS_ACCESS_KEY_ID: "test",
        AWS_SECRET_ACCESS_KEY: "test",
        CAPABILITY_PUBLIC_KEY: JSON.stringify(publicJwk),
        DATA_ROOT: dataRoot.path,
        NODE_ID: nodeId,
        DATA_PLANE_PORT: String(dataPlanePort),
        DATA_PLANE_HOST: "127.0.0.1",
        // Not the default 9464: parallel tests (and other engineers) share the host.
        METRICS_PORT: String(await freePort()),
        SANDBOX_IMAGE: p.image,
        SANDBOX_KEEP_WARM_SECONDS: "0",
        WORKER_CONCURRENCY: "1",
        LOG_LEVEL: "warn",
        ...p.env,
      },
      cwd: ROOT,
      url: `http://127.0.0.1:${dataPlanePort}`,
      readyPath: "/healthz",
      readyTimeoutMs: 60_000,
    });
  } catch (error) {
    await removeLeftovers();
    throw error;
  }
  return {
    ...server,
    nodeId,
    async stop() {
      await server.stop();
      await removeLeftovers();
    },
  };
}
