import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { FakeInternet } from "./fake-internet.ts";
import { pollUntil } from "./poll-until.ts";

const run = promisify(execFile);

/**
 * Debian's OpenSSH server (openssh-server, /usr/sbin/sshd) on the fake internet's address,
 * for tests of ssh through the egress proxy (issue #34). Key login only, for root, whose
 * every session runs one fixed command (ForceCommand): a client proves it got through by
 * printing `reply`, and nothing else can run. Its log says every connection it saw.
 */
export type FakeSshd = {
  readonly port: number;
  /** The client's private key (OpenSSH format, ed25519). */
  readonly clientKey: string;
  /** What a session prints. */
  readonly reply: string;
  /** How many TCP connections reached sshd (its `Connection from` log lines). */
  connections(): Promise<number>;
  close(): Promise<void>;
};

export async function startFakeSshd(net: FakeInternet, port = 2222): Promise<FakeSshd> {
  const dir = await mkdtemp(join(tmpdir(), "wc-fake-sshd-"));
  const keygen = (file: string) =>
    run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, file)], {
      timeout: 30_000,
    });
  await keygen("host_key");
  await keygen("client_key");
  const reply = `ssh-ok-${port}`;
  const log = join(dir, "sshd.log");
  await writeFile(
    join(dir, "sshd_config"),
    [
      `ListenAddress ${net.address}:${port}`,
      `HostKey ${join(dir, "host_key")}`,
      `AuthorizedKeysFile ${join(dir, "client_key.pub")}`,
      "PermitRootLogin prohibit-password",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "UsePAM no",
      "StrictModes no",
      "LogLevel VERBOSE",
      `ForceCommand echo ${reply}`,
      `PidFile ${join(dir, "sshd.pid")}`,
      "",
    ].join("\n"),
  );
  let sshd: ChildProcess | undefined;
  const close = async () => {
    sshd?.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  };
  const connections = async () =>
    ((await readFile(log, "utf8").catch(() => "")).match(/Connection from /g) ?? []).length;
  try {
    // sshd refuses to start without its privilege-separation directory (its service makes it).
    await mkdir("/run/sshd", { recursive: true, mode: 0o755 });
    // -D: no daemon (the test owns the process); -e off, -E: the log file counts connections.
    sshd = spawn(
      "ip",
      [
        "netns",
        "exec",
        net.namespace,
        "/usr/sbin/sshd",
        "-D",
        "-f",
        join(dir, "sshd_config"),
        "-E",
        log,
      ],
      { stdio: "ignore" },
    );
    await pollUntil(
      async () => (await readFile(log, "utf8").catch(() => "")).includes("Server listening"),
      { timeoutMs: 30_000, intervalMs: 100, what: "sshd to listen" },
    );
  } catch (error) {
    await close();
    throw new Error(`sshd did not start (is openssh-server installed?): ${String(error)}`);
  }
  return {
    port,
    clientKey: await readFile(join(dir, "client_key"), "utf8"),
    reply,
    connections,
    close,
  };
}
