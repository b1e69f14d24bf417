import { and, desc, eq, isNull, lt, or, sql } from "drizzle-orm";
import type { CryptoKey } from "jose";
import type { PersonalToken, TokenScope } from "../../shared/contracts/personal-token.ts";
import type { Db } from "../../shared/db/client.ts";
import { type PersonalAccessTokenRow, personalAccessTokens } from "../../shared/db/schema.ts";
import type { Principal } from "../auth/principal.ts";
import type { TokenVerification } from "../auth/token-verifier.ts";
import {
  hashSecret,
  newPersonalToken,
  parsePersonalToken,
  secretMatches,
} from "./personal-token-secret.ts";

/** last_used_at is written at most this often per token: one write a minute, not a request. */
const LAST_USED_GRANULARITY_MS = 60_000;
const DAY_MS = 86_400_000;

export type PersonalTokens = {
  create(
    uid: string,
    input: { name: string; scopes: readonly TokenScope[]; expiresInDays?: number },
  ): Promise<PersonalToken & { token: string }>;
  list(uid: string): Promise<PersonalToken[]>;
  /** False when `uid` has no such token (another user's is "no such token" too). */
  revoke(uid: string, tokenId: string): Promise<boolean>;
  /**
   * A `wct_` bearer token to a principal, read from the database on every request (no
   * cache): a revoked or expired token is refused on the very next request, on every
   * instance.
   */
  verify(token: string): Promise<TokenVerification>;
};

export function createPersonalTokens(deps: {
  db: Db;
  key: Promise<CryptoKey>;
  now?: () => Date;
}): PersonalTokens {
  const now = deps.now ?? (() => new Date());
  return {
    async create(uid, input) {
      const { tokenId, secret, token } = newPersonalToken();
      const createdAt = now();
      const [row] = await deps.db
        .insert(personalAccessTokens)
        .values({
          tokenId,
          uid,
          name: input.name,
          scopes: [...input.scopes],
          secretHash: await hashSecret(await deps.key, secret),
          createdAt,
          expiresAt:
            input.expiresInDays === undefined
              ? null
              : new Date(createdAt.getTime() + input.expiresInDays * DAY_MS),
        })
        .returning();
      if (row === undefined) throw new Error("token insert returned no row");
      return { ...view(row), token };
    },
    async list(uid) {
      const rows = await deps.db
        .select()
        .from(personalAccessTokens)
        .where(eq(personalAccessTokens.uid, uid))
        .orderBy(desc(personalAccessTokens.createdAt));
      return rows.map(view);
    },
    async revoke(uid, tokenId) {
      const rows = await deps.db
        .update(personalAccessTokens)
        .set({ revokedAt: sql`coalesce(${personalAccessTokens.revokedAt}, now())` })
        .where(and(eq(personalAccessTokens.tokenId, tokenId), eq(personalAccessTokens.uid, uid)))
        .returning({ tokenId: personalAccessTokens.tokenId });
      return rows.length > 0;
    },
    async verify(token) {
      const parsed = parsePersonalToken(token);
      if (parsed === undefined) return { ok: false, reason: "malformed personal access token" };
      const [row] = await deps.db
        .select()
        .from(personalAccessTokens)
        .where(eq(personalAccessTokens.tokenId, parsed.tokenId));
      if (row === undefined) return { ok: false, reason: "unknown personal access token" };
      if (!(await secretMatches(await deps.key, parsed.secret, row.secretHash))) {
        return { ok: false, reason: "personal access token secret mismatch" };
      }
      const at = now();
      if (row.revokedAt !== null) return { ok: false, reason: "personal access token revoked" };
      if (row.expiresAt !== null && row.expiresAt <= at) {
        return { ok: false, reason: "personal access token expired" };
      }
      await touch(deps.db, row.tokenId, at);
      return { ok: true, principal: principalOf(row) };
    },
  };
}

function principalOf(row: PersonalAccessTokenRow): Principal {
  const scopes = row.scopes as TokenScope[];
  return { uid: row.uid, admin: scopes.includes("admin"), scopes, tokenId: row.tokenId };
}

/** Records the use, unless it was recorded less than a minute ago (then nothing is written). */
async function touch(db: Db, tokenId: string, at: Date): Promise<void> {
  const stale = new Date(at.getTime() - LAST_USED_GRANULARITY_MS);
  await db
    .update(personalAccessTokens)
    .set({ lastUsedAt: at })
    .where(
      and(
        eq(personalAccessTokens.tokenId, tokenId),
        or(isNull(personalAccessTokens.lastUsedAt), lt(personalAccessTokens.lastUsedAt, stale)),
      ),
    );
}

function view(row: PersonalAccessTokenRow): PersonalToken {
  return {
    token_id: row.tokenId,
    name: row.name,
    scopes: row.scopes as TokenScope[],
    created_at: row.createdAt.toISOString(),
    expires_at: row.expiresAt?.toISOString() ?? null,
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
    revoked_at: row.revokedAt?.toISOString() ?? null,
  };
}
