import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { inject } from "vitest";

export type TestDatabase = {
  /** Connection URL of a fresh, migrated database owned by this test alone. */
  url: string;
  /** A postgres.js client on it (closed by drop()). */
  sql: postgres.Sql;
  /** Closes the client and drops the database. */
  drop(): Promise<void>;
};

/** The cluster's superuser URL, or a loud failure naming what is missing. */
export function postgresAdminUrl(): string {
  const url = inject("pgAdminUrl");
  if (!url) throw new Error(inject("pgError") || "PostgreSQL test cluster is not running");
  return url;
}

/**
 * A fresh database cloned from the migrated template: milliseconds, and no test sees
 * another's rows. Call drop() in afterEach/afterAll.
 */
export async function freshDatabase(options: { max?: number } = {}): Promise<TestDatabase> {
  const adminUrl = postgresAdminUrl();
  const name = `t_${randomBytes(8).toString("hex")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${inject("pgTemplateDb")}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const sql = postgres(url.toString(), { max: options.max ?? 10, onnotice: () => {} });
  return {
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      const dropper = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await dropper.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await dropper.end();
      }
    },
  };
}
