import { execFile } from "node:child_process";
import { chown, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./free-port.ts";

const run = promisify(execFile);

export type PostgresCluster = {
  adminUrl: string;
  stop(): Promise<void>;
};

/** Where Debian puts the server binaries; never a hard-coded major version. */
async function postgresBinDir(): Promise<string> {
  const base = "/usr/lib/postgresql";
  const versions = await readdir(base).catch(() => [] as string[]);
  const newest = versions
    .map(Number)
    .filter(Number.isFinite)
    .sort((a, b) => b - a)[0];
  if (newest === undefined) {
    throw new Error(
      "PostgreSQL server binaries are missing (no /usr/lib/postgresql/*/bin): run scripts/ensure-system.sh or apt-get install -y postgresql",
    );
  }
  return join(base, String(newest), "bin");
}

/**
 * A throw-away cluster for one test run: initdb with trust auth and no fsync, bound to
 * loopback on a free port, its socket in the cluster's own directory. initdb refuses to
 * run as root, so as root the cluster belongs to the `postgres` user.
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const bin = await postgresBinDir();
  const dir = await mkdtemp(join(tmpdir(), "workcell-pg-"));
  const asRoot = process.getuid?.() === 0;
  const runPg = async (tool: string, args: string[]) => {
    const command = asRoot ? "runuser" : join(bin, tool);
    const argv = asRoot ? ["-u", "postgres", "--", join(bin, tool), ...args] : args;
    return run(command, argv, { cwd: dir });
  };
  if (asRoot) await chown(dir, ...(await postgresIds()));
  const data = join(dir, "data");
  const port = await freePort();
  await runPg("initdb", ["-A", "trust", "--no-sync", "-U", "postgres", "-E", "UTF8", "-D", data]);
  const options = [
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    "-c listen_addresses=127.0.0.1",
    `-p ${port}`,
    `-k ${dir}`,
    "-c max_connections=400",
  ].join(" ");
  await runPg("pg_ctl", ["start", "-w", "-s", "-D", data, "-l", join(dir, "log"), "-o", options]);
  return {
    adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      await runPg("pg_ctl", ["stop", "-s", "-m", "immediate", "-D", data]).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function postgresIds(): Promise<[number, number]> {
  const { stdout } = await run("id", ["-u", "postgres"]).catch(() => {
    throw new Error("the postgres system user is missing: apt-get install -y postgresql");
  });
  const { stdout: gid } = await run("id", ["-g", "postgres"]);
  return [Number(stdout.trim()), Number(gid.trim())];
}
