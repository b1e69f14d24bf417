// A separate process that races a sandbox create (mount-symlink-race.test.ts): it keeps
// swapping a directory on a bind's path (the UserWorkspace, the Workdir or a directory
// between them) for a symlink to a directory outside, and back, until its stdin closes.
// It swaps in bursts of random length with random pauses between them (the real
// directory in place), so creates land both inside a burst and between bursts.
// A `pause` line on stdin stops it between bursts (the real directory in place) and it
// answers `paused`; `resume` starts it again with one burst done before it answers
// `resumed`, so a create that follows the answer always races a swapper that is swapping.
// It announces `swapping` after its first burst, for the same reason.
// Run as `node symlink-swapper.ts <path> <outside>`.
import { renameSync, symlinkSync, unlinkSync } from "node:fs";
import { createInterface } from "node:readline";

const [victim, outside] = process.argv.slice(2) as [string, string];
const parked = `${victim}.parked`;
let stop = false;
let paused = false;
let next: NodeJS.Timeout | undefined;
const commands = createInterface({ input: process.stdin });
commands.on("line", (line) => {
  if (line === "pause") {
    // Bursts are synchronous: between two lines the real directory is in place.
    paused = true;
    clearTimeout(next);
    process.stdout.write("paused\n");
  } else if (line === "resume" && paused) {
    paused = false;
    burst();
    process.stdout.write("resumed\n");
  }
});
commands.on("close", () => {
  stop = true;
  if (paused) finish();
});
function finish(): never {
  process.stdout.write(`${JSON.stringify({ swaps })}\n`);
  process.exit(0);
}
let swaps = 0;
function burst(): void {
  const length = 1 + Math.floor(Math.random() * 50);
  for (let i = 0; i < length && !stop; i++) {
    renameSync(victim, parked);
    symlinkSync(outside, victim);
    unlinkSync(victim);
    renameSync(parked, victim);
    swaps++;
  }
  if (stop) finish();
  // The attacker's pacing, not synchronisation: 0-7 ms with the real directory in place.
  next = setTimeout(burst, Math.floor(Math.random() * 8));
}
burst();
process.stdout.write("swapping\n");
