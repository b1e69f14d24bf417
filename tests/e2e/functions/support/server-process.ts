import { type ChildProcess, spawn } from "node:child_process";
import { conditionWaiters } from "../../../support/condition-waiters.ts";

export type ServerProcess = {
  url: string;
  /** Everything the process printed, for failure messages. */
  output(): string;
  /**
   * Resolves with the output once `done(output)` holds (checked as each chunk arrives);
   * rejects with the output after `timeoutMs`.
   */
  untilOutput(done: (output: string) => boolean, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
};

/**
 * Starts a server as its own process group (so stop() also ends its children, e.g.
 * wrangler's workerd) and waits until `readyPath` answers anything but a connection error.
 */
export async function startServerProcess(p: {
  command: string;
  args: string[];
  env: Record<string, string | undefined>;
  url: string;
  readyPath: string;
  readyTimeoutMs: number;
  cwd: string;
}): Promise<ServerProcess> {
  let output = "";
  const waiters = conditionWaiters();
  const child: ChildProcess = spawn(p.command, p.args, {
    cwd: p.cwd,
    env: p.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const append = (chunk: unknown) => {
    output += String(chunk);
    waiters.changed();
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  const untilOutput = async (done: (output: string) => boolean, timeoutMs = 60_000) => {
    await waiters.until(
      () => done(output),
      timeoutMs,
      () => `${p.command}: expected output not seen in ${timeoutMs} ms:\n${output}`,
    );
    return output;
  };
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.pid === undefined) return;
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      return;
    }
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {}
    }, 5_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + p.readyTimeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${p.command} exited early:\n${output}`);
    try {
      await fetch(`${p.url}${p.readyPath}`, { signal: AbortSignal.timeout(2_000) });
      return { url: p.url, output: () => output, untilOutput, stop };
    } catch {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`${p.command} did not answer within ${p.readyTimeoutMs} ms:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
