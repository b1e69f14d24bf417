// Applied by `npm install`/`npm ci` (package.json "postinstall"; decisions 0111, 0146):
// places where postgres.js 3.4.9 lets a connection closing under it end the process (1, 2)
// or leave a statement unsettled for good (3).
// Idempotent (each patch has its own marker); fails the install loudly if the driver's text
// is not the one a patch knows (a new version must be checked against upstream, not patched
// blindly).
//
// 1. The deferred write (porsager/postgres#1154, #1066, #1208; fixes #1168/#1209 unmerged,
//    3.4.10 still unguarded): a small write is flushed from a setImmediate; when the socket
//    closed in between, `socket.write` runs on null and the TypeError is thrown from the
//    immediate, where no caller can catch it. The guard settles the connection's queries
//    with CONNECTION_CLOSED instead (what the pool already does for a close it sees).
// 2. The array-type fetch (decision 0146): on a new connection's first ReadyForQuery the
//    driver starts `fetchArrayTypes()`, an async function nobody awaits. When the connection
//    is cut while its types query is in flight, that query is rejected with the socket's
//    error (ECONNRESET, a stack of Node's net internals only) and so is the function's
//    promise: an unhandled rejection, which Node turns into an uncaught exception that
//    names no driver frame. The same error has already been delivered to the query that
//    opened the connection (errored() rejects `initial`), so the duplicate is dropped.
// 3. A statement sent between a socket's `error` and its `close` (decision 0167): the
//    `error` event settles the statements the connection had; `close` settles the rest
//    only when it came without an error (`!hadError`). A statement the caller sent in
//    between (a transaction's `rollback` after its statement failed, the next query of a
//    caller whose rejection handler ran first) sat in the closed connection for ever:
//    neither failed nor answered, its pool slot taken. Now a closing connection settles
//    whatever it holds with CONNECTION_CLOSED, whatever the close; a query already
//    rejected by the error is rejected again, which does nothing.
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const driver = join(root, "node_modules", "postgres");
const builds = ["src", "cjs/src", "cf/src"];

const deferredWrite = "workcell patch: porsager/postgres#1208";
const arrayTypes = "workcell patch: unawaited fetchArrayTypes";
const closedAfterError = "workcell patch: a closing connection settles what it holds";
const patches = [
  {
    marker: deferredWrite,
    unguarded: "  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n",
    guarded: [
      "  function nextWrite(fn) {",
      `    if (!socket) { // ${deferredWrite} (scripts/patch-postgres.mjs)`,
      "      chunk = nextWriteTimer = null",
      "      error(Errors.connection('CONNECTION_CLOSED', options, socket))",
      "      return false",
      "    }",
      "    const x = socket.write(chunk, fn)",
      "",
    ].join("\n"),
  },
  {
    marker: arrayTypes,
    unguarded: "        return fetchArrayTypes()\n",
    guarded: `        return fetchArrayTypes().catch(noop) // ${arrayTypes} (scripts/patch-postgres.mjs)\n`,
  },
  {
    marker: closedAfterError,
    unguarded:
      "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n",
    guarded: `    ;(query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket)) // ${closedAfterError} (scripts/patch-postgres.mjs)\n`,
  },
];

async function patchFile(file) {
  let text = await readFile(file, "utf8");
  const outcomes = [];
  for (const { marker, unguarded, guarded } of patches) {
    if (text.includes(marker)) {
      outcomes.push("already patched");
      continue;
    }
    if (text.split(unguarded).length !== 2) {
      throw new Error(
        `${file}: the text '${unguarded.trim()}' is not the 3.4.9 text this patch knows (${marker}); check the new postgres version upstream and update scripts/patch-postgres.mjs`,
      );
    }
    text = text.replace(unguarded, guarded);
    outcomes.push("patched");
  }
  await writeFile(file, text);
  return outcomes.join(", ");
}

const version = JSON.parse(await readFile(join(driver, "package.json"), "utf8")).version;
if (version !== "3.4.9") {
  throw new Error(
    `postgres ${version} installed; scripts/patch-postgres.mjs knows 3.4.9 only (decisions 0111, 0146, 0167)`,
  );
}
for (const build of builds) {
  const outcome = await patchFile(join(driver, build, "connection.js"));
  if (process.env.npm_config_loglevel !== "silent") {
    console.error(`patch-postgres: ${build}/connection.js ${outcome}`);
  }
}
