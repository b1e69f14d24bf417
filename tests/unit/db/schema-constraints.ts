import type { Db } from "../../../shared/db/client.ts";
import { defineResourceConstraintTests } from "./resource-schema-constraints.ts";
import { defineRunConstraintTests } from "./run-schema-constraints.ts";
import { defineThreadConstraintTests } from "./thread-schema-constraints.ts";

// The schema's invariants, run against a real PostgreSQL (integration,
// postgres-migrations.test.ts) through the drizzle code the planes use.

// Registers the shared tests; `getDb` is called inside each test (after beforeAll).
export function defineSchemaConstraintTests(getDb: () => Db): void {
  defineRunConstraintTests(getDb);
  defineThreadConstraintTests(getDb);
  defineResourceConstraintTests(getDb);
}
