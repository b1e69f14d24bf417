import { sql } from "drizzle-orm";
import {
  bigint,
  check,
  foreignKey,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uuid,
} from "drizzle-orm/pg-core";
import { agentRuns } from "./agent-runs.ts";
import { createdAt, enumCheck, timestamptz } from "./columns.ts";

export const EXECUTION_LEASE_STATES = ["waiting", "held"] as const;
export type ExecutionLeaseState = (typeof EXECUTION_LEASE_STATES)[number];

// The Execution Lease (docs/architecture.md §5, docs/decisions/0014): one row per command that
// waits for or holds its writable root. Rows of one uid whose `root_key`s overlap (equal,
// or one a prefix of the other: the key is "/" + Workdir + "/", so a prefix is an
// ancestor) are granted one at a time in `seq` order. A row is alive only while its run is
// running under the same attempt with an unexpired run lease: a node that dies stops
// heartbeating its runs, and its lease rows stop counting within the run-lease TTL, so no
// lease outlives its holder. Dead rows are deleted by whoever next looks.
//
// A row without a run (`run_id` null) is a holder that is not a command: a manual
// checkpoint's copy (docs/decisions/0170). It lives only until `expires_at`, which its
// holder renews while it waits or holds; a holder whose node died stops renewing and its
// row stops counting at `expires_at`, the way a run row lapses with its run lease.
export const executionLeases = pgTable(
  "execution_leases",
  {
    leaseId: uuid("lease_id").primaryKey(),
    uid: text("uid").notNull(),
    rootKey: text("root_key").notNull(),
    runId: uuid("run_id"),
    attempt: integer("attempt"),
    // Only for a row without a run: when it stops counting unless renewed.
    expiresAt: timestamptz("expires_at"),
    nodeId: text("node_id").notNull(),
    state: text("state", { enum: EXECUTION_LEASE_STATES }).notNull(),
    // Arrival order within a uid: assigned under the uid's advisory lock, so a later
    // arrival always has a higher seq and sees every earlier one.
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity().notNull(),
    createdAt: createdAt(),
    acquiredAt: timestamptz("acquired_at"),
  },
  (t) => [
    foreignKey({
      name: "execution_leases_run_fk",
      columns: [t.runId, t.uid],
      foreignColumns: [agentRuns.runId, agentRuns.uid],
    }),
    enumCheck("execution_leases_state_check", t.state, EXECUTION_LEASE_STATES),
    check(
      "execution_leases_root_key_check",
      sql`${t.rootKey} ~ '^/(.*/)?$' and char_length(${t.rootKey}) <= 4200`,
    ),
    check(
      "execution_leases_held_check",
      sql`(${t.state} = 'held') = (${t.acquiredAt} is not null)`,
    ),
    check(
      "execution_leases_holder_check",
      sql`(${t.runId} is null) = (${t.attempt} is null) and (${t.runId} is null) = (${t.expiresAt} is not null)`,
    ),
    index("execution_leases_uid_idx").on(t.uid, t.seq),
  ],
);

export type ExecutionLeaseRow = typeof executionLeases.$inferSelect;

// The last lease granted on each (uid, root): the `seq` of the newest command that held
// it, stamped under the uid's arrival lock at every grant (execution_lease_functions.sql).
// A command that kept its own after-scan may use it as its next before-scan when no
// overlapping root was granted to anyone since its own last grant (docs/decisions/0036).
// One row per root a uid ever used: bounded by the uid's projects.
export const executionLeaseRoots = pgTable(
  "execution_lease_roots",
  {
    uid: text("uid").notNull(),
    rootKey: text("root_key").notNull(),
    lastGrantedSeq: bigint("last_granted_seq", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ name: "execution_lease_roots_pkey", columns: [t.uid, t.rootKey] })],
);
