// `npm run bench`: runs every *.bench.ts under tests/bench/ in its own Node process (so
// one benchmark's heap and handles cannot skew the next) and forwards its output. Each
// benchmark prints medians, p99 and ratios against a baseline it measured itself.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

const dir = import.meta.dirname;
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
let failed = 0;
for (const file of files) {
  console.log(`\n# ${file}`);
  const result = spawnSync(process.execPath, [join(dir, file)], { stdio: "inherit" });
  if (result.status !== 0) {
    failed++;
    console.error(`${file} failed (exit ${result.status})`);
  }
}
process.exit(failed === 0 ? 0 : 1);
