#!/usr/bin/env node
// `workcell` (npx workcell / node bin/workcell.ts): the operator commands of infra/ops
// (migrate, keys, doctor) and the API client commands of sdk/cli, behind one name.
// Each side is imported only when used: the client CLI needs no database driver, and an
// install without infra/ops still runs the client commands.
const OPS_COMMANDS = new Set(["migrate", "keys", "doctor"]);
/** Where #18's operator CLI lives; a variable so a build without it still type-checks. */
const OPS_CLI = "../infra/ops/ops-cli.ts";

async function launch(argv: string[]): Promise<number> {
  if (OPS_COMMANDS.has(argv[0] ?? "")) {
    let ops: { runOpsCommand(argv: string[]): Promise<number> };
    try {
      ops = await import(OPS_CLI);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ERR_MODULE_NOT_FOUND") throw error;
      process.stderr.write(
        `workcell ${argv[0]}: not available in this build (infra/ops is not installed); the client commands are: workcell help\n`,
      );
      return 2;
    }
    return ops.runOpsCommand(argv);
  }
  const { main } = await import("../sdk/cli/main.ts");
  return main(argv);
}

process.exitCode = await launch(process.argv.slice(2));
