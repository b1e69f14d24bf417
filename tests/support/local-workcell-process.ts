import { type ChildProcess, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { LABEL } from "../../agent-host/sandbox/instance/container-labels.ts";
import { mintDevToken } from "../../infra/local/dev-token.ts";
import { localNodeId } from "../../infra/local/local-stack.ts";
import { freePort } from "../setup/free-port.ts";
import { type DataRoot, freshDataRoot } from "./data-root.ts";
import { removeContainersLabelled, requireDocker } from "./docker.ts";

const REPO = join(import.meta.dirname, "../..");
// Generous: on a loaded shared machine the first start (migrations, builtin skills) is slow.
const STARTUP_TIMEOUT_MS = 300_000;

export type LocalWorkcell = {
  /** The API, e.g. http://127.0.0.1:41234. */
  url: string;
  dataDir: string;
  /** A dev token for `uid` signed with this Workcell's secret. */
  token(uid: string, options?: { admin?: boolean }): Promise<string>;
  output(): string;
  stop(): Promise<void>;
};

/**
 * `npm start` in its own process on free ports and a fresh data directory, as a user runs
 * it; stopping it (SIGINT) also removes the sandboxes its node left behind.
 */
export async function startLocalWorkcell(
  extraEnv: Record<string, string> = {},
): Promise<LocalWorkcell> {
  const { docker } = requireDocker();
  const dataRoot: DataRoot = await freshDataRoot();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, ["infra/local/main.ts"], {
    cwd: REPO,
    env: {
      ...process.env,
      LOG_LEVEL: "warn",
      DATA_DIR: dataRoot.path,
      PORT: String(port),
      AWS_EMULATOR_PORT: String(await freePort()),
      DATA_PLANE_PORT: String(await freePort()),
      // Not the default 9464: parallel tests (and other engineers) share the host.
      METRICS_PORT: String(await freePort()),
      ...extraEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d) => {
    output += d;
  });
  child.stderr?.on("data", (d) => {
    output += d;
  });
  const exited = new Promise<void>((done) => child.on("exit", () => done()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGINT");
    await exited;
    await removeContainersLabelled(docker, LABEL.nodeId, localNodeId(dataRoot.path));
    await dataRoot.remove();
  };
  try {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`Workcell exited early:\n${output}`);
      if (Date.now() > deadline) throw new Error(`Workcell did not start:\n${output}`);
      const ok = await fetch(`${url}/v1/healthz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const secrets = JSON.parse(await readFile(join(dataRoot.path, "secrets.json"), "utf8")) as {
    devJwtSecret: string;
  };
  return {
    url,
    dataDir: dataRoot.path,
    token: (uid, options = {}) =>
      mintDevToken(secrets.devJwtSecret, uid, { admin: options.admin ?? false }),
    output: () => output,
    stop,
  };
}
