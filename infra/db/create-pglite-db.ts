import type { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import type { PgliteDb } from "../../shared/db/client.ts";
import * as schema from "../../shared/db/schema.ts";

// The local one-process mode's database: the same schema over an embedded PGlite.
// PGlite is a single backend, so advisory locks never contend there: never use it to
// test concurrency (docs/testing.md).
export function createPgliteDb(pglite: PGlite): PgliteDb {
  return drizzle(pglite, { schema });
}
