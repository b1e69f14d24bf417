import { WorkcellError } from "../errors/workcell-error.ts";

export interface EnvProblem {
  /** The environment variable, e.g. `DATABASE_URL`. */
  readonly variable: string;
  /** What is wrong and how to fix it; never contains the variable's value. */
  readonly message: string;
}

/**
 * A deployable's environment is unusable. Coded `internal`: if it ever reaches a
 * client, `toErrorBody` shows the generic message, while the operator's log shows
 * every bad variable at once.
 */
export class EnvError extends WorkcellError {
  override readonly name: string = "EnvError";
  readonly problems: readonly EnvProblem[];

  constructor(problems: readonly EnvProblem[]) {
    const lines = problems.map((p) => `  - ${p.variable}: ${p.message}`);
    super(
      "internal",
      `Invalid environment: ${problems.length} variable(s) to fix:\n${lines.join("\n")}`,
      { details: { variables: problems.map((p) => p.variable) } },
    );
    this.problems = problems;
  }
}
