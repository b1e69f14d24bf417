import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDb } from "../../../shared/db/client.ts";
import {
  executePreparedStatement,
  prepareStatement,
} from "../../../shared/db/execute-prepared-rows.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";

const query = (n: number, s: string) => sql`select ${n}::int as n, ${s}::text as s`;
/** The same statement rendered once, its values named. */
const rendered = prepareStatement(
  "probe",
  sql`select ${sql.placeholder("n")}::int as n, ${sql.placeholder("s")}::text as s`,
);
/** The statement's text as PostgreSQL holds it once prepared. */
const TEXT = "select $1::int as n, $2::text as s";

describe("executePreparedStatement on postgres.js", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    // One connection: the prepared statements seen below are that connection's.
    database = await freshDatabase({ max: 1 });
  });
  afterAll(async () => {
    await database?.drop();
  });

  const prepared = async () =>
    database.sql<{ n: number }[]>`select count(*)::int as n from pg_prepared_statements
      where statement = ${TEXT}`;

  test("returns the rows and keeps one named statement per text on the connection", async () => {
    const db = createDb(database.sql);
    expect(await executeRows(db, query(1, "a"))).toEqual([{ n: 1, s: "a" }]);
    // Drizzle's own execute leaves no named statement: it is parsed again every time.
    expect((await prepared())[0]?.n).toBe(0);

    expect(
      await executePreparedStatement(db, prepareStatement("probe", query(2, "b")), {}),
    ).toEqual([{ n: 2, s: "b" }]);
    expect(
      await executePreparedStatement(db, prepareStatement("probe", query(3, "c")), {}),
    ).toEqual([{ n: 3, s: "c" }]);
    // Parsed once, reused by the second call with other parameters.
    expect((await prepared())[0]?.n).toBe(1);
  });

  test("a statement rendered once runs with each call's values, on the same named statement", async () => {
    const db = createDb(database.sql);
    expect(await executePreparedStatement(db, rendered, { n: 8, s: "h" })).toEqual([
      { n: 8, s: "h" },
    ]);
    expect(await executePreparedStatement(db, rendered, { n: 9, s: "i" })).toEqual([
      { n: 9, s: "i" },
    ]);
    expect((await prepared())[0]?.n).toBe(1);
    // A value left out fails before anything reaches the database.
    await expect(executePreparedStatement(db, rendered, { n: 10 })).rejects.toThrow(/s/);
  });

  test("runs inside a transaction, which sees its own writes", async () => {
    const db = createDb(database.sql);
    const rows = await db.transaction(async (tx) => {
      await tx.execute(sql`create temporary table probe (n int) on commit drop`);
      await tx.execute(sql`insert into probe values (7)`);
      return executePreparedStatement<{ n: number }>(
        tx,
        prepareStatement("probe_tx", sql`select n from probe where n = ${7}::int`),
        {},
      );
    });
    expect(rows).toEqual([{ n: 7 }]);
  });
});
