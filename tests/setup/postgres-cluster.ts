import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPostgresServer } from "../../infra/db/postgres-server.ts";
import { freePort } from "./free-port.ts";

export type PostgresCluster = {
  adminUrl: string;
  stop(): Promise<void>;
};

/**
 * A throw-away cluster for one test run, started by the same launcher as the local
 * Workcell's (infra/db/postgres-server.ts): the same engine, with durability off, bound
 * to loopback on a free port as well as its own socket.
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const dir = await mkdtemp(join(tmpdir(), "workcell-pg-"));
  const server = await startPostgresServer({
    dir,
    tcpPort: await freePort(),
    throwAway: true,
    settings: { max_connections: "400" },
  });
  return {
    adminUrl: server.url(),
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
