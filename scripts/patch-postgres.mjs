// Applied by `npm install`/`npm ci` (package.json "postinstall"; decision 0111): guards
// postgres.js 3.4.9's deferred write against a connection that closed before it ran.
// Upstream (porsager/postgres#1154, #1066, #1208; fixes #1168/#1209 unmerged, 3.4.10 still
// unguarded) a small write is flushed from a setImmediate; when the socket closed in
// between, `socket.write` runs on null and the TypeError is thrown from the immediate, where
// no caller can catch it, so one dropped connection ends the whole process. The guard
// settles the connection's queries with CONNECTION_CLOSED instead (what the pool already
// does for a close it sees), which every caller handles as a database error.
// Idempotent; fails the install loudly if the driver's text is not the one this patch knows
// (a new version must be checked against the upstream fix, not patched blindly).
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const driver = join(root, "node_modules", "postgres");
const builds = ["src", "cjs/src", "cf/src"];
const unguarded = "  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n";
const marker = "workcell patch: porsager/postgres#1208";
const guarded = [
  "  function nextWrite(fn) {",
  `    if (!socket) { // ${marker} (scripts/patch-postgres.mjs)`,
  "      chunk = nextWriteTimer = null",
  "      error(Errors.connection('CONNECTION_CLOSED', options, socket))",
  "      return false",
  "    }",
  "    const x = socket.write(chunk, fn)",
  "",
].join("\n");

async function patchFile(file) {
  const text = await readFile(file, "utf8");
  if (text.includes(marker)) return "already patched";
  if (!text.includes(unguarded)) {
    throw new Error(
      `${file}: nextWrite is not the 3.4.9 text this patch knows; check the new postgres version against porsager/postgres#1208 and update scripts/patch-postgres.mjs`,
    );
  }
  await writeFile(file, text.replace(unguarded, guarded));
  return "patched";
}

const version = JSON.parse(await readFile(join(driver, "package.json"), "utf8")).version;
if (version !== "3.4.9") {
  throw new Error(
    `postgres ${version} installed; scripts/patch-postgres.mjs knows 3.4.9 only (decision 0111)`,
  );
}
for (const build of builds) {
  const outcome = await patchFile(join(driver, build, "connection.js"));
  if (process.env.npm_config_loglevel !== "silent") {
    console.error(`patch-postgres: ${build}/connection.js ${outcome}`);
  }
}
