import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import type { ExecRequest } from "../driver.ts";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The exec's own variables as NAME=value pairs, refusing names or values a driver cannot pass. */
export function execEnvEntries(env: ExecRequest["env"]): Array<[string, string]> {
  return Object.entries(env ?? {}).map(([name, value]) => {
    if (!ENV_NAME.test(name) || value.includes("\u0000")) {
      throw new WorkcellError(
        "invalid_request",
        `Environment variable ${JSON.stringify(name)} is not allowed: use [A-Za-z_][A-Za-z0-9_]* names and values without NUL.`,
      );
    }
    return [name, value];
  });
}
