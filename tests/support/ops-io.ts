import type { OpsIo } from "../../infra/ops/ops-io.ts";

/** An OpsIo that records what a command printed. */
export function captureIo(env: Record<string, string | undefined> = {}): OpsIo & {
  out: () => string;
  err: () => string;
} {
  let out = "";
  let err = "";
  return {
    stdout: (text) => {
      out += text;
    },
    stderr: (text) => {
      err += text;
    },
    env,
    out: () => out,
    err: () => err,
  };
}
