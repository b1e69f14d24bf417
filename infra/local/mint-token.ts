// `npm run token -- <uid> [--admin] [--data-dir <dir>]`: prints a dev token for the local
// Workcell (token-command.ts); --help for the details.
import { tokenCommand } from "./token-command.ts";

const out = await tokenCommand(process.argv.slice(2), process.env);
if (out.stdout !== undefined) console.log(out.stdout);
if (out.stderr !== undefined) console.error(out.stderr);
process.exitCode = out.code;
