// A separate process that races the process tier's create: it keeps swapping a uid's
// UserWorkspace directory for a symlink to a directory outside it, and back, as fast as
// it can, until its stdin closes. Run as `node symlink-swapper.ts <workspace> <outside>`.
import { renameSync, symlinkSync, unlinkSync } from "node:fs";

const [workspace, outside] = process.argv.slice(2) as [string, string];
const parked = `${workspace}.parked`;
let stop = false;
process.stdin.on("close", () => {
  stop = true;
});
process.stdin.resume();
process.stdout.write("swapping\n");
let swaps = 0;
function round(): void {
  for (let i = 0; i < 200 && !stop; i++) {
    renameSync(workspace, parked);
    symlinkSync(outside, workspace);
    unlinkSync(workspace);
    renameSync(parked, workspace);
    swaps++;
  }
  if (stop) {
    process.stdout.write(`${JSON.stringify({ swaps })}\n`);
    process.exit(0);
  }
  setImmediate(round);
}
round();
