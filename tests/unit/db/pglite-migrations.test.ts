import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createPgliteDb } from "../../../infra/db/create-pglite-db.ts";
import { migrate } from "../../../infra/db/migrate.ts";
import { SchemaNewerThanCodeError } from "../../../infra/db/schema-version.ts";
import type { Db } from "../../../shared/db/client.ts";
import { defineSchemaConstraintTests } from "./schema-constraints.ts";

// The embedded engine of the local one-process mode must accept the same migrations and
// enforce the same constraints as PostgreSQL. (Concurrency is tested on PostgreSQL only:
// PGlite is a single backend.)
describe("migrations on PGlite", () => {
  let pglite: PGlite;
  let db: Db;

  // PGlite's start-up is CPU-bound (WASM): on a loaded machine it takes tens of seconds.
  beforeAll(async () => {
    pglite = await PGlite.create();
    await migrate(pglite);
    db = createPgliteDb(pglite);
  }, 120_000);

  afterAll(async () => {
    await pglite?.close();
  });

  test("migrating again is a no-op", async () => {
    const before = await pglite.query(
      "select count(*)::int as n from drizzle.__drizzle_migrations",
    );
    await migrate(pglite);
    const after = await pglite.query("select count(*)::int as n from drizzle.__drizzle_migrations");
    expect(after.rows).toEqual(before.rows);
    expect(before.rows).not.toEqual([{ n: 0 }]);
  });

  test("the local mode refuses a database migrated by newer code, applying nothing", async () => {
    const future = Date.now() + 365 * 86_400_000;
    await pglite.query(
      "insert into drizzle.__drizzle_migrations (hash, created_at) values ('future', $1)",
      [future],
    );
    try {
      const before = await pglite.query("select id from drizzle.__drizzle_migrations order by id");
      await expect(migrate(pglite)).rejects.toBeInstanceOf(SchemaNewerThanCodeError);
      const after = await pglite.query("select id from drizzle.__drizzle_migrations order by id");
      expect(after.rows).toEqual(before.rows);
    } finally {
      await pglite.query("delete from drizzle.__drizzle_migrations where hash = 'future'");
    }
  });

  defineSchemaConstraintTests(() => db);
});
