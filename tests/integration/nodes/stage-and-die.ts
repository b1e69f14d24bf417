// A create caught between staging and release, as a crash leaves it: stages a bind of
// <dir> at <stagingRoot>/<name>/workspace (staged-binds.ts, the real mount), says
// "staged" on stdout and waits to be killed. The mount outlives the process.
import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { stageBinds } from "../../../agent-host/sandbox/container/staged-binds.ts";

const [stagingRoot, name, dir] = process.argv.slice(2);
if (!stagingRoot || !name || !dir)
  throw new Error("usage: stage-and-die <stagingRoot> <name> <dir>");
const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
await stageBinds(stagingRoot, name, { workspace: handle }, AbortSignal.timeout(30_000));
process.stdout.write("staged\n");
setInterval(() => {}, 60_000);
