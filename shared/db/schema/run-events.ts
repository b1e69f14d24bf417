import { sql } from "drizzle-orm";
import {
  check,
  foreignKey,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  uuid,
} from "drizzle-orm/pg-core";
import { agentRuns } from "./agent-runs.ts";
import { createdAt } from "./columns.ts";

// The SSE stream of a run: seq is the event id clients resume from (Last-Event-ID).
//
// The sequence is gap-free and duplicate-free by construction: the primary key forbids a
// second event with the same seq, and prev_seq (= seq - 1, NULL for the first event)
// references the previous event of the same run, so event n cannot exist without event
// n - 1. A reader that has seen seq k can therefore trust that nothing below k will
// appear later. Writers append with seq = max(seq) + 1 and treat a unique violation as
// "someone else (a stale worker) wrote concurrently".
export const runEvents = pgTable(
  "run_events",
  {
    runId: uuid("run_id").notNull(),
    uid: text("uid").notNull(),
    seq: integer("seq").notNull(),
    prevSeq: integer("prev_seq").generatedAlwaysAs(sql`nullif(seq - 1, 0)`),
    type: text("type").notNull(),
    data: jsonb("data").$type<unknown>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ name: "run_events_pkey", columns: [t.runId, t.seq] }),
    foreignKey({
      name: "run_events_run_fk",
      columns: [t.runId, t.uid],
      foreignColumns: [agentRuns.runId, agentRuns.uid],
    }),
    foreignKey({
      name: "run_events_prev_fk",
      columns: [t.runId, t.prevSeq],
      foreignColumns: [t.runId, t.seq],
    }),
    check("run_events_seq_check", sql`${t.seq} >= 1`),
  ],
);

export type RunEvent = typeof runEvents.$inferSelect;
export type NewRunEvent = typeof runEvents.$inferInsert;
