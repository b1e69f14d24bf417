import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import { execEnvironment } from "./bwrap-args.ts";

export type ExecSpec = {
  cmd: readonly string[];
  /** Absolute sandbox path the command starts in. */
  cwd: string;
  /** The exec's own variables, already validated (exec-env.ts); BASE_ENV is added here. */
  env: ReadonlyArray<readonly [string, string]>;
};

/**
 * What the exec shim (native/exec-shim.c) reads on its spec fd once the pre-built sandbox
 * is released (decision 0088): NUL-terminated strings, argc and envc in decimal, the cwd,
 * argv, then the environment as NAME=value, ending at EOF. A NUL inside any of them would
 * shift every string after it (a variable turned into an argument, or the reverse), so
 * it is refused; exec(2) could not have carried it anyway.
 */
export function encodeExecSpec(spec: ExecSpec): Buffer {
  if (spec.cmd.length === 0) {
    throw new WorkcellError("invalid_request", "An exec needs a command (cmd is empty).");
  }
  const environment = execEnvironment(spec.env);
  for (const arg of [spec.cwd, ...spec.cmd, ...environment]) {
    if (arg.includes("\0")) {
      throw new WorkcellError(
        "invalid_request",
        "An exec argument contains a NUL byte: arguments cannot carry NUL; pass the data on stdin or in a file.",
      );
    }
  }
  const strings = [
    String(spec.cmd.length),
    String(environment.length),
    spec.cwd,
    ...spec.cmd,
    ...environment,
  ];
  return Buffer.from(strings.map((s) => `${s}\0`).join(""), "utf8");
}
