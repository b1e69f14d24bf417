// The attacker of race.test.ts, run as its own process (like a sandbox would be): swaps a
// directory for a symlink to outside and back, as fast as it can, until stdin closes.
// Usage: node swapper.ts <directory-to-swap> <symlink-target>
import { lstatSync, renameSync, symlinkSync, unlinkSync } from "node:fs";
import { performance } from "node:perf_hooks";

const [target, linkTo] = process.argv.slice(2) as [string, string];
const parked = `${target}.parked`;
let swaps = 0;
let stop = false;
process.stdin.on("end", () => {
  stop = true;
});
process.stdin.on("data", () => {});
process.stdin.resume();

/** Holds a state for a moment, so the other side meets both the symlink and the real directory. */
function hold(): void {
  const until = performance.now() + HOLD_MS;
  while (performance.now() < until) {
    // spin
  }
}

const HOLD_MS = 0.02;

function swapOnce(): void {
  try {
    renameSync(target, parked);
    symlinkSync(linkTo, target);
    swaps++;
  } catch {
    // The test may have removed or recreated the tree meanwhile: try again.
  }
  hold();
  try {
    if (lstatSync(target).isSymbolicLink()) unlinkSync(target);
    renameSync(parked, target);
  } catch {
    // Same.
  }
  hold();
}

process.stdout.write("ready\n");

function loop(): void {
  // Bursts of synchronous swaps, yielding now and then so the stdin "end" is seen.
  for (let i = 0; i < 200 && !stop; i++) swapOnce();
  if (stop) {
    process.stdout.write(`swaps ${swaps}\n`);
    return;
  }
  setImmediate(loop);
}
loop();
