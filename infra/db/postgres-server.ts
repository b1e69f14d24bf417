import { execFile, spawn } from "node:child_process";
import { access, chmod, chown, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

// A PostgreSQL server of the machine's own binaries (the Debian package that
// scripts/ensure-system.sh installs), started and stopped by the process that needs it:
// the local Workcell (data under DATA_DIR, kept) and the test suite (a throw-away cluster).
// One engine for production, local mode and the tests (docs/decisions/0092).

const run = promisify(execFile);

/** pg_ctl waits at most this long for the server to accept connections (or stop). */
const PG_CTL_WAIT_SECONDS = 60;
/** The bound on each pg_ctl / initdb call itself, beyond its own wait. */
const TOOL_TIMEOUT_MS = (PG_CTL_WAIT_SECONDS + 30) * 1000;
/** The superuser initdb creates; the local Workcell and the tests connect as it. */
export const POSTGRES_SUPERUSER = "postgres";

export type PostgresServerOptions = {
  /**
   * The server's directory: `data/` (the cluster, made by initdb when absent), `run/`
   * (its Unix socket; mode 0700, so only its owner connects) and `server.log`.
   */
  dir: string;
  /** A loopback TCP port as well (the tests); absent: the Unix socket only. */
  tcpPort?: number;
  /** Durability off (fsync, full pages): a throw-away cluster for tests only. */
  throwAway?: boolean;
  /** Extra `-c name=value` settings. */
  settings?: Record<string, string>;
};

export type PostgresServer = {
  /** A URL of `database` (default `postgres`) over loopback TCP; only with `tcpPort`. */
  url(database?: string): string;
  /** postgres.js connection options of `database` over the server's Unix socket. */
  connection(database?: string): { host: string; port: number; user: string; database: string };
  /** Whether initdb ran now (a new, empty cluster). */
  created: boolean;
  /** Stops the server (fast shutdown: open transactions roll back). Never throws. */
  stop(): Promise<void>;
};

/** Where Debian puts the server binaries; the newest major installed, never a hard-coded one. */
export async function postgresBinDir(): Promise<string> {
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
 * Starts the cluster at `dataDir` (initdb first when there is none). initdb refuses to
 * run as root, so as root the cluster's directories belong to the `postgres` user and
 * the tools run as it. The server runs in a session of its own (a Ctrl-C in the terminal
 * reaches the local Workcell, which then stops the server after its own shutdown, not
 * the server directly). A server left running by a killed process is stopped first.
 */
export async function startPostgresServer(options: PostgresServerOptions): Promise<PostgresServer> {
  const bin = await postgresBinDir();
  const owner = process.getuid?.() === 0 ? await postgresIds() : undefined;
  const tool = (name: string, args: string[]) => runTool(bin, owner, name, args);
  const dataDir = join(options.dir, "data");
  const socketDir = join(options.dir, "run");
  for (const dir of [options.dir, dataDir, socketDir]) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700);
    if (owner) await chown(dir, owner[0], owner[1]);
  }
  // The socket's path must fit sockaddr_un (107 bytes).
  if (join(socketDir, ".s.PGSQL.65535").length > 107) {
    throw new Error(
      `the PostgreSQL socket path under ${socketDir} is too long for a Unix socket: choose a shorter DATA_DIR`,
    );
  }
  const created = !(await exists(join(dataDir, "PG_VERSION")));
  if (created) {
    const sync = options.throwAway ? ["--no-sync"] : [];
    await tool("initdb", [
      "-A",
      "trust",
      ...sync,
      "-U",
      POSTGRES_SUPERUSER,
      "-E",
      "UTF8",
      "--locale=C.UTF-8",
      "-D",
      dataDir,
    ]);
  }
  // A server of this directory still running (its owner was killed): stop it, then start
  // it with this process's settings.
  if (await exists(join(dataDir, "postmaster.pid"))) {
    await tool("pg_ctl", ["stop", "-s", "-m", "fast", "-D", dataDir]).catch(() => {});
  }
  const port = options.tcpPort ?? 5432;
  const settings: Record<string, string> = {
    listen_addresses: options.tcpPort === undefined ? "''" : "127.0.0.1",
    port: String(port),
    unix_socket_directories: `'${socketDir}'`,
    unix_socket_permissions: "0700",
    ...(options.throwAway
      ? { fsync: "off", synchronous_commit: "off", full_page_writes: "off" }
      : {}),
    ...options.settings,
  };
  const serverOptions = Object.entries(settings)
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(" ");
  await tool("pg_ctl", [
    "start",
    "-w",
    "-t",
    String(PG_CTL_WAIT_SECONDS),
    "-s",
    "-D",
    dataDir,
    "-l",
    join(options.dir, "server.log"),
    "-o",
    serverOptions,
  ]);
  return {
    created,
    url(database = "postgres") {
      if (options.tcpPort === undefined) throw new Error("this server listens on its socket only");
      return `postgres://${POSTGRES_SUPERUSER}@127.0.0.1:${port}/${database}`;
    },
    connection: (database = "postgres") => ({
      host: socketDir,
      port,
      user: POSTGRES_SUPERUSER,
      database,
    }),
    async stop() {
      await tool("pg_ctl", ["stop", "-s", "-m", "fast", "-D", dataDir]).catch(() => {});
    },
  };
}

/** Runs a server tool, as the postgres user when we are root; in its own session. */
async function runTool(
  bin: string,
  owner: [number, number] | undefined,
  name: string,
  args: string[],
): Promise<void> {
  const path = join(bin, name);
  const [command, argv] = owner
    ? ["runuser", ["-u", POSTGRES_SUPERUSER, "--", path, ...args]]
    : [path, args];
  const child = spawn(command, argv, {
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
    cwd: "/",
    timeout: TOOL_TIMEOUT_MS,
  });
  let stderr = "";
  child.stderr?.on("data", (d) => {
    if (stderr.length < 4096) stderr += d;
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (c) => resolve(c));
  });
  if (code !== 0) {
    throw new Error(`${name} ${args[0] ?? ""} failed (exit ${code}): ${stderr.trim()}`);
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

async function postgresIds(): Promise<[number, number]> {
  const ids = await Promise.all([
    run("id", ["-u", POSTGRES_SUPERUSER]),
    run("id", ["-g", POSTGRES_SUPERUSER]),
  ]).catch(() => {
    throw new Error("the postgres system user is missing: apt-get install -y postgresql");
  });
  return [Number(ids[0].stdout.trim()), Number(ids[1].stdout.trim())];
}
