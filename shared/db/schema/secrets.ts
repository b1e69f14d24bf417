import { sql } from "drizzle-orm";
import { check, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { createdAt, timestamptz } from "./columns.ts";

// A user's secrets (docs/api.md "Secrets", docs/architecture.md §15, decision 0131). The
// value is never stored in clear: `ciphertext` is AES-256-GCM under a fresh data key,
// and `wrapped_key` is that data key sealed by the deployment's key (`key_id` names it),
// both bound to `<uid>/<name>` as associated data, so a row copied to another user or
// name does not open. Not tenant-linked, like user_limits: a uid may store a secret before
// it ever ran anything.
export const userSecrets = pgTable(
  "user_secrets",
  {
    uid: text("uid").notNull(),
    name: text("name").notNull(),
    hosts: text("hosts").array().notNull(),
    header: text("header").notNull(),
    template: text("template").notNull(),
    keyId: text("key_id").notNull(),
    wrappedKey: text("wrapped_key").notNull(),
    ciphertext: text("ciphertext").notNull(),
    createdAt: createdAt(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.uid, t.name] }),
    check("user_secrets_name_check", sql`${t.name} ~ '^[A-Z][A-Z0-9_]{0,63}$'`),
    check("user_secrets_hosts_check", sql`cardinality(${t.hosts}) > 0`),
  ],
);

export type UserSecretRow = typeof userSecrets.$inferSelect;
