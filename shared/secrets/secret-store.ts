import { and, asc, eq } from "drizzle-orm";
import type { PutSecret, Secret } from "../contracts/secret.ts";
import type { DbOrTransaction } from "../db/client.ts";
import { type UserSecretRow, userSecrets } from "../db/schema.ts";
import { type KeyWrapper, openSecret, sealSecret, secretContext } from "./secret-envelope.ts";

/** How a secret is sent (its row without the sealed value). */
export type SecretBinding = {
  readonly name: string;
  readonly hosts: readonly string[];
  readonly header: string;
  readonly template: string;
};

function wire(row: UserSecretRow): Secret {
  return {
    name: row.name,
    hosts: row.hosts,
    header: row.header,
    template: row.template,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** Creates or replaces `name` of `uid` in one statement; answers it without the value. */
export async function putSecret(
  db: DbOrTransaction,
  keys: KeyWrapper,
  uid: string,
  name: string,
  body: PutSecret,
): Promise<Secret> {
  const sealed = await sealSecret(keys, body.value, secretContext(uid, name));
  const values = {
    hosts: [...new Set(body.hosts)],
    header: body.header,
    template: body.template,
    ...sealed,
    updatedAt: new Date(),
  };
  const [row] = await db
    .insert(userSecrets)
    .values({ uid, name, ...values })
    .onConflictDoUpdate({ target: [userSecrets.uid, userSecrets.name], set: values })
    .returning();
  if (row === undefined) throw new Error("the secret upsert returned no row");
  return wire(row);
}

export async function listSecrets(db: DbOrTransaction, uid: string): Promise<Secret[]> {
  const rows = await db
    .select()
    .from(userSecrets)
    .where(eq(userSecrets.uid, uid))
    .orderBy(asc(userSecrets.name));
  return rows.map(wire);
}

/** True when it existed (another user's name is simply not found). */
export async function deleteSecret(
  db: DbOrTransaction,
  uid: string,
  name: string,
): Promise<boolean> {
  const gone = await db
    .delete(userSecrets)
    .where(and(eq(userSecrets.uid, uid), eq(userSecrets.name, name)))
    .returning({ name: userSecrets.name });
  return gone.length > 0;
}

/** The user's secrets as they are now, each with a way to open its value (only when needed). */
export type LiveSecret = SecretBinding & { value(signal?: AbortSignal): Promise<string> };

export async function loadLiveSecrets(
  db: DbOrTransaction,
  keys: KeyWrapper,
  uid: string,
): Promise<LiveSecret[]> {
  const rows = await db.select().from(userSecrets).where(eq(userSecrets.uid, uid));
  return rows.map((row) => ({
    name: row.name,
    hosts: row.hosts,
    header: row.header,
    template: row.template,
    value: (signal) => openSecret(keys, row, secretContext(uid, row.name), signal),
  }));
}
