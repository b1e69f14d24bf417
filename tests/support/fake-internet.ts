import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { pollUntil } from "./poll-until.ts";

const run = promisify(execFile);
const HOSTS_LOCK = "/run/lock/workcell-test-etc-hosts.lock";

/**
 * A fake internet for egress tests (issue #34): a network namespace joined to the host by a
 * veth pair on a /30 of TEST-NET-2 (198.51.100.0/24, documentation addresses: traffic never
 * leaves this machine), with HTTP (:80), HTTPS (:443, a self-signed certificate), a TCP echo
 * (:22) and a control port in it. Names reach the node's resolver through /etc/hosts lines
 * tagged with this instance, added and removed under a lock (other tests edit it too).
 * Needs root (ip netns).
 */
export type FakeInternet = {
  /** The servers' address (in the namespace). */
  readonly address: string;
  /** The network namespace (`ip netns exec <namespace> …` runs a further server in it). */
  readonly namespace: string;
  /** The host end of the veth: one of the node's own addresses. */
  readonly hostAddress: string;
  /** `<label>-<instance>.test`: names unique to this instance (parallel tests share /etc/hosts). */
  name(label: string): string;
  /** The self-signed certificate of :443 (PEM), for clients that verify. */
  readonly certPath: string;
  /** Maps names to addresses in /etc/hosts until close (one line per pair). */
  addHosts(entries: readonly (readonly [string, string])[]): Promise<void>;
  /** Every request / connection the servers saw, oldest first. */
  seen(): Promise<
    { port: number; host: string | null; path: string | null; method: string | null }[]
  >;
  resetSeen(): Promise<void>;
  close(): Promise<void>;
};

async function editHosts(script: string): Promise<void> {
  // `cat >` rewrites in place: /etc/hosts may be a bind mount that a rename would break.
  await run("flock", [HOSTS_LOCK, "sh", "-c", script], { timeout: 10_000 });
}

async function freeSubnet(): Promise<number> {
  const { stdout } = await run("ip", ["-o", "addr"], { timeout: 5_000 });
  for (let attempt = 0; attempt < 64; attempt++) {
    const base = 4 * (1 + Math.floor(Math.random() * 60));
    if (!stdout.includes(`198.51.100.${base + 1}/`) && !stdout.includes(`198.51.100.${base + 2}/`))
      return base;
  }
  throw new Error("no free /30 in 198.51.100.0/24");
}

export async function startFakeInternet(
  options: { staticDir?: string } = {},
): Promise<FakeInternet> {
  const id = randomBytes(3).toString("hex");
  const ns = `wcfi-${id}`;
  const hostIf = `wcfh${id}`;
  const nsIf = `wcfn${id}`;
  const tag = `# workcell-fake-internet-${id}`;
  const base = await freeSubnet();
  const hostAddress = `198.51.100.${base + 1}`;
  const address = `198.51.100.${base + 2}`;
  const certDir = await mkdtemp(join(tmpdir(), "wc-fake-internet-"));
  const ip = (...args: string[]) => run("ip", args, { timeout: 10_000 });
  await run(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/CN=allowed-${id}.test`,
      "-addext",
      `subjectAltName=DNS:allowed-${id}.test,DNS:denied-${id}.test`,
      "-keyout",
      join(certDir, "key.pem"),
      "-out",
      join(certDir, "cert.pem"),
    ],
    { timeout: 30_000 },
  );
  await ip("netns", "add", ns);
  let server: ChildProcess | undefined;
  const close = async () => {
    server?.kill("SIGKILL");
    await editHosts(
      `grep -vF '${tag}' /etc/hosts > /etc/hosts.wc-${id}; cat /etc/hosts.wc-${id} > /etc/hosts; rm -f /etc/hosts.wc-${id}`,
    ).catch(() => {});
    await ip("link", "del", hostIf).catch(() => {});
    await ip("netns", "del", ns).catch(() => {});
    await rm(certDir, { recursive: true, force: true });
  };
  try {
    await ip("link", "add", hostIf, "type", "veth", "peer", "name", nsIf);
    await ip("link", "set", nsIf, "netns", ns);
    await ip("addr", "add", `${hostAddress}/30`, "dev", hostIf);
    await ip("link", "set", hostIf, "up");
    await ip("netns", "exec", ns, "ip", "addr", "add", `${address}/30`, "dev", nsIf);
    await ip("netns", "exec", ns, "ip", "link", "set", nsIf, "up");
    await ip("netns", "exec", ns, "ip", "link", "set", "lo", "up");
    const script = new URL("./fake-internet-server.ts", import.meta.url).pathname;
    const args = [
      script,
      address,
      certDir,
      ...(options.staticDir === undefined ? [] : [options.staticDir]),
    ];
    const child = spawn("ip", ["netns", "exec", ns, process.execPath, ...args], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    server = child;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("fake internet did not start")), 30_000);
      child.stdout?.once("data", () => {
        clearTimeout(timer);
        resolve();
      });
      child.once("exit", (code) => reject(new Error(`fake internet exited ${code}`)));
    });
  } catch (error) {
    await close();
    throw error;
  }
  const control = (path: string) =>
    fetch(`http://${address}:9000${path}`, { signal: AbortSignal.timeout(10_000) }).then(
      (res) =>
        res.json() as Promise<
          { port: number; host: string | null; path: string | null; method: string | null }[]
        >,
    );
  await pollUntil(
    async () => (await control("/seen").catch(() => undefined)) !== undefined,
    30_000,
  );
  return {
    address,
    namespace: ns,
    hostAddress,
    name: (label) => `${label}-${id}.test`,
    certPath: join(certDir, "cert.pem"),
    async addHosts(entries) {
      const lines = entries.map(([name, to]) => `${to} ${name} ${tag}`).join("\\n");
      await editHosts(`printf '${lines}\\n' >> /etc/hosts`);
    },
    seen: () => control("/seen"),
    resetSeen: async () => void (await control("/reset")),
    close,
  };
}
