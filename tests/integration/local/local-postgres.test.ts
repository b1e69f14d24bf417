import { mkdir, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import postgres from "postgres";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import {
  LEGACY_PGLITE_DIR,
  LegacyPgliteDataError,
  LOCAL_POSTGRES_DIR,
  startLocalPostgres,
} from "../../../infra/local/local-postgres.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { testLogger } from "../../support/test-logger.ts";

// Issue 32 (1): the local Workcell runs PostgreSQL itself, with its data under DATA_DIR,
// reachable only through a Unix socket in a 0700 directory; a data directory of an
// earlier version (PGlite) is refused with what to do, and nothing is changed in it.

describe("the local Workcell's PostgreSQL", () => {
  let data: DataRoot;
  beforeEach(async () => {
    data = await freshDataRoot();
  });
  afterEach(async () => {
    await data.remove();
  });

  test("starts a new cluster, keeps its data across a restart, and listens on no TCP port", async () => {
    const first = await startLocalPostgres(data.path, testLogger());
    expect(first.created).toBe(true);
    let sql = postgres({ ...first.connection(), max: 1, onnotice: () => {} });
    try {
      await sql`create table kept (v text)`;
      await sql`insert into kept values ('across restarts')`;
      const [row] = await sql<
        { listen: string }[]
      >`select current_setting('listen_addresses') as listen`;
      expect(row?.listen).toBe("");
    } finally {
      await sql.end({ timeout: 5 });
      await first.stop();
    }
    const socketDir = first.connection().host;
    expect((await stat(socketDir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(data.path, LOCAL_POSTGRES_DIR))).mode & 0o777).toBe(0o700);

    const again = await startLocalPostgres(data.path, testLogger());
    expect(again.created).toBe(false);
    sql = postgres({ ...again.connection(), max: 1, onnotice: () => {} });
    try {
      expect(await sql`select v from kept`).toEqual([{ v: "across restarts" }]);
    } finally {
      await sql.end({ timeout: 5 });
      await again.stop();
    }
  }, 120_000);

  test("refuses an earlier version's PGlite data, says how to start fresh, and changes nothing", async () => {
    const legacy = join(data.path, LEGACY_PGLITE_DIR);
    await mkdir(legacy, { recursive: true });
    await writeFile(join(legacy, "PG_VERSION"), "17\n");
    const before = await readdir(data.path, { recursive: true });
    const refused = await startLocalPostgres(data.path, testLogger()).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LegacyPgliteDataError);
    expect((refused as Error).message).toContain(`mv ${data.path} ${data.path}.pglite`);
    expect(await readdir(data.path, { recursive: true })).toEqual(before);
  });
});
