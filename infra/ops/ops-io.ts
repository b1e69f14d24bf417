/** Where an ops command writes and what it reads: the process's by default, a buffer in tests. */
export type OpsIo = {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
};

export function processIo(): OpsIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
  };
}

/** A usage or configuration mistake: printed without a stack, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
