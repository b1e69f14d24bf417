// `node infra/ops/main.ts <migrate|keys|doctor> …`: the operator commands without the
// `workcell` launcher (runOpsCommand in ops-cli.ts is what the launcher calls).
import { runOpsCommand } from "./ops-cli.ts";

process.exitCode = await runOpsCommand(process.argv.slice(2));
