import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createPgliteDb } from "../../../infra/db/create-pglite-db.ts";
import { migrate } from "../../../infra/db/migrate.ts";
import type { Db } from "../../../shared/db/client.ts";
import { defineSchemaConstraintTests } from "./schema-constraints.ts";

// The embedded engine of the local one-process mode must accept the same migrations and
// enforce the same constraints as PostgreSQL. (Concurrency is tested on PostgreSQL only:
// PGlite is a single backend.)
describe("migrations on PGlite", () => {
  let pglite: PGlite;
  let db: Db;

  beforeAll(async () => {
    pglite = await PGlite.create();
    await migrate(pglite);
    db = createPgliteDb(pglite);
  });

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

  defineSchemaConstraintTests(() => db);
});
