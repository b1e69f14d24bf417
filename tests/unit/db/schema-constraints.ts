import type { Db } from "../../../shared/db/client.ts";
import { defineResourceConstraintTests } from "./resource-schema-constraints.ts";
import { defineRunConstraintTests } from "./run-schema-constraints.ts";
import { defineThreadConstraintTests } from "./thread-schema-constraints.ts";

// The schema's invariants, run against PGlite (unit) and a real PostgreSQL
// (integration) through the same drizzle code, so both engines are held to one contract.

// Registers the shared tests; `getDb` is called inside each test (after beforeAll).
export function defineSchemaConstraintTests(getDb: () => Db): void {
  defineRunConstraintTests(getDb);
  defineThreadConstraintTests(getDb);
  defineResourceConstraintTests(getDb);
}
