import { type SQL, sql } from "drizzle-orm";
import {
  bigint,
  check,
  foreignKey,
  index,
  pgSequence,
  pgTable,
  text,
  unique,
  uuid,
} from "drizzle-orm/pg-core";
import { DEFAULT_FILE_VIEW, FILE_VIEW_VALUES } from "../../paths/file-view.ts";
import { createdAt, enumCheck, timestamptz, workdirPathCheck } from "./columns.ts";
import { nodes } from "./nodes.ts";

export const SANDBOX_STATES = ["creating", "running", "destroying", "destroyed", "failed"] as const;
export type SandboxState = (typeof SANDBOX_STATES)[number];

// Generations come from one global sequence rather than a per-row `generation + 1`:
// a number is then never handed out twice, even if a sandbox row is deleted and later
// re-created for the same sandbox_id, so a container still labelled with an old
// generation can never be mistaken for the new one (no ABA across row deletion).
// Per sandbox_id they are strictly increasing because every new value is larger than
// any value already committed.
export const sandboxGenerationSeq = pgSequence("sandbox_generation_seq");

// SQL that allocates a fresh generation. Allocation protocol (agent-host/sandbox):
//   first create:  INSERT ... ON CONFLICT (sandbox_id) DO NOTHING RETURNING generation
//                  (the column default allocates);
//   re-create:     UPDATE sandboxes SET generation = <nextSandboxGeneration()>, ...
//                  WHERE sandbox_id = $1 AND generation = $observed RETURNING generation
// Both are conditional, so of N concurrent acquires exactly one gets a row back and a
// new generation; the others re-read and reuse it.
export function nextSandboxGeneration(): SQL<number> {
  return sql<number>`nextval('sandbox_generation_seq')`;
}

// One row per sandbox_id holding its current (latest) generation. No foreign key to
// conversations: this is agent-host lifecycle bookkeeping, not an authorization source,
// and reconcile must be able to record and destroy a sandbox whatever happened to its
// thread.
export const sandboxes = pgTable(
  "sandboxes",
  {
    // First 12 hex of sha256("<uid>:<runtime_scope_id>") (shared/ identity function).
    sandboxId: text("sandbox_id").primaryKey(),
    uid: text("uid").notNull(),
    runtimeScopeId: uuid("runtime_scope_id").notNull(),
    // Fixed for the scope's lifetime: a different Workdir in the same scope is
    // SandboxIdentityMismatch, never a silent remount.
    workdirPath: text("workdir_path").notNull(),
    // The generation's file view (docs/architecture.md §5): fixed by its mounts at create, so
    // a run asking for another view gets another generation, never a remount.
    fileView: text("file_view", { enum: FILE_VIEW_VALUES }).notNull().default(DEFAULT_FILE_VIEW),
    generation: bigint("generation", { mode: "number" })
      .notNull()
      .default(sql`nextval('sandbox_generation_seq')`),
    nodeId: text("node_id").notNull(),
    state: text("state", { enum: SANDBOX_STATES }).notNull().default("creating"),
    instanceId: text("container_id"),
    lastUsedAt: timestamptz("last_used_at").notNull().defaultNow(),
    // Set when the execution tree that used this generation ended and it is kept warm
    // for the conversation's next turn (docs/architecture.md §4.5); cleared when a run takes
    // it again. The idle reaper destroys a generation released longer than the
    // keep-warm window ago, with the same generation fence as every destroy.
    releasedAt: timestamptz("released_at"),
    createdAt: createdAt(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    // The identity is a function of (uid, scope); a second row for the pair would mean
    // two sandboxes for one execution tree.
    unique("sandboxes_uid_scope_key").on(t.uid, t.runtimeScopeId),
    foreignKey({ name: "sandboxes_node_fk", columns: [t.nodeId], foreignColumns: [nodes.nodeId] }),
    check("sandboxes_id_check", sql`${t.sandboxId} ~ '^[0-9a-f]{12}$'`),
    check("sandboxes_generation_check", sql`${t.generation} >= 1`),
    enumCheck("sandboxes_state_check", t.state, SANDBOX_STATES),
    workdirPathCheck("sandboxes_workdir_path_check", t.workdirPath),
    enumCheck("sandboxes_file_view_check", t.fileView, FILE_VIEW_VALUES),
    // Reconcile (a node's sandboxes by state) and the idle reaper (oldest last use).
    index("sandboxes_node_state_idx").on(t.nodeId, t.state, t.lastUsedAt),
  ],
);

export type Sandbox = typeof sandboxes.$inferSelect;
export type NewSandbox = typeof sandboxes.$inferInsert;
