// Applied by `npm install`/`npm ci` after patch-postgres.mjs (package.json "postinstall";
// decision 0182): the local SQS emulator's SQLite persistence syncs to disk on every write.
// fauxqs 2.4.1 opens its database in WAL mode with SQLite's default `synchronous = FULL`,
// so each message sent, received and deleted is an fsync of the WAL on Node's main thread:
// three per run, ~7 ms of a blocked event loop per message on this machine's disk, for
// every request and run of the local Workcell. `synchronous = NORMAL` is SQLite's
// recommended setting for WAL: a commit survives the process ending (the write reached the
// OS); only an OS crash or power loss can drop the last ones, and a run whose message was
// lost is sent again by the dispatch sweeper (functions/runs/dispatch-sweeper.ts).
// Idempotent (marker); fails the install loudly if fauxqs's text is not the one it knows.
// A production install (`npm ci --omit=dev`, the agent-host image) has no fauxqs: skipped.
import { access, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const emulator = join(root, "node_modules", "fauxqs");
const marker = "workcell patch: WAL synchronous NORMAL";
const unpatched = '        this.db.exec("PRAGMA journal_mode = WAL");\n';
const patched = `${unpatched}        this.db.exec("PRAGMA synchronous = NORMAL"); // ${marker} (scripts/patch-fauxqs.mjs)\n`;

const installed = await access(join(emulator, "package.json")).then(
  () => true,
  () => false,
);
if (installed) {
  const version = JSON.parse(await readFile(join(emulator, "package.json"), "utf8")).version;
  if (version !== "2.4.1") {
    throw new Error(
      `fauxqs ${version} installed; scripts/patch-fauxqs.mjs knows 2.4.1 only (decision 0182): check its persistence.js and update the patch`,
    );
  }
  const file = join(emulator, "dist", "persistence.js");
  const text = await readFile(file, "utf8");
  let outcome = "already patched";
  if (!text.includes(marker)) {
    if (text.split(unpatched).length !== 2) {
      throw new Error(
        `${file}: the WAL line is not the 2.4.1 text this patch knows (decision 0182); update scripts/patch-fauxqs.mjs`,
      );
    }
    await writeFile(file, text.replace(unpatched, patched));
    outcome = "patched";
  }
  if (process.env.npm_config_loglevel !== "silent") {
    console.error(`patch-fauxqs: dist/persistence.js ${outcome}`);
  }
}
