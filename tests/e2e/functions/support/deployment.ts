import { join } from "node:path";
import { freePort } from "../../../setup/free-port.ts";
import { functionsEntryEnv } from "../../../support/functions-entry-env.ts";
import type { TestDatabase } from "../../../support/postgres.ts";
import { type AgentHostProcess, startAgentHostProcess } from "./agent-host-process.ts";
import { type ServerProcess, startServerProcess } from "./server-process.ts";

const ROOT = join(import.meta.dirname, "../../../..");

/** A deployment's two processes and what they share. */
export type Deployment = {
  database: TestDatabase;
  /** functions/entry/node.ts; `url` is the API. */
  functions: ServerProcess;
  /** agent-host/main.ts; `url` is its data plane, which `functions` calls. */
  agentHost: AgentHostProcess;
  /** Stops both processes and drops the database; safe after either was stopped. */
  stop(): Promise<void>;
};

/**
 * The two processes as deployed (functions/entry/node.ts and agent-host/main.ts), each
 * configured only by its environment, on a fresh database, queue and bucket: what a test
 * of a real run across the planes starts in beforeAll. A start that fails undoes what it
 * had started.
 */
export async function startDeployment(p: {
  devJwtSecret: string;
  /** Names the fresh queue and the agent-host's node (and so its sandboxes' label). */
  name: string;
  /** The sandbox image (the test's `inject("sandboxImage")`). */
  image: string;
  /** The functions entry's LOG_LEVEL. */
  logLevel: string;
  /** Variables both processes get (OTEL_*). */
  env?: Record<string, string>;
  /** Variables only the agent-host gets, over `env`. */
  agentHostEnv?: Record<string, string>;
}): Promise<Deployment> {
  const { database, vars } = await functionsEntryEnv({
    devJwtSecret: p.devJwtSecret,
    queuePrefix: p.name,
    logLevel: p.logLevel,
  });
  let agentHost: AgentHostProcess | undefined;
  try {
    agentHost = await startAgentHostProcess({
      functionsVars: vars,
      image: p.image,
      nodePrefix: p.name,
      env: { ...p.env, ...p.agentHostEnv },
    });
    const port = await freePort();
    const functions = await startServerProcess({
      command: process.execPath,
      args: [join(ROOT, "functions/entry/node.ts")],
      env: {
        PATH: process.env.PATH,
        ...vars,
        DATA_PLANE_URL: agentHost.url,
        HOST: "127.0.0.1",
        PORT: String(port),
        ...p.env,
      },
      cwd: ROOT,
      url: `http://127.0.0.1:${port}`,
      readyPath: "/v1/healthz",
      readyTimeoutMs: 30_000,
    });
    const started = agentHost;
    return {
      database,
      functions,
      agentHost: started,
      async stop() {
        await functions.stop();
        await started.stop();
        await database.drop();
      },
    };
  } catch (error) {
    await agentHost?.stop();
    await database.drop();
    throw error;
  }
}
