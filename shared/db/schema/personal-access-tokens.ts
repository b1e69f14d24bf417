import { sql } from "drizzle-orm";
import { check, index, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { createdAt, timestamptz } from "./columns.ts";

// Personal access tokens (docs/api.md "Personal access tokens", decision 0097). The token is
// `wct_<token_id hex>_<secret>`: only the HMAC of the secret under the deployment's key is
// stored, so neither a database dump nor a backup holds a usable token. A revoked row
// stays (list shows it revoked) until its owner's tokens are cleaned up.
export const personalAccessTokens = pgTable(
  "personal_access_tokens",
  {
    tokenId: uuid("token_id").primaryKey(),
    uid: text("uid").notNull(),
    name: text("name").notNull(),
    scopes: text("scopes").array().notNull(),
    // Hex HMAC-SHA256 of the secret (personal-token-secret.ts).
    secretHash: text("secret_hash").notNull(),
    createdAt: createdAt(),
    expiresAt: timestamptz("expires_at"),
    lastUsedAt: timestamptz("last_used_at"),
    revokedAt: timestamptz("revoked_at"),
  },
  (t) => [
    check(
      "personal_access_tokens_scopes_check",
      sql`${t.scopes} <@ array['runs', 'files', 'admin']::text[] and cardinality(${t.scopes}) > 0`,
    ),
    index("personal_access_tokens_uid_idx").on(t.uid, t.createdAt),
  ],
);

export type PersonalAccessTokenRow = typeof personalAccessTokens.$inferSelect;
