import type postgres from "postgres";
import { expect } from "vitest";

/**
 * Personal access tokens against a running deployable (Node entry, wrangler dev): created
 * with a sign-in token, accepted within their scope and refused (403) outside it, refused
 * (401) on the very next request once revoked or expired, and never in the server's output
 * or the database.
 */
export async function checkPersonalTokens(p: {
  url: string;
  signInToken: string;
  sql: postgres.Sql;
  output: () => string;
}): Promise<void> {
  const call = (token: string, method: string, path: string, body?: unknown) =>
    fetch(`${p.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const create = async (name: string) => {
    const res = await call(p.signInToken, "POST", "/v1/tokens", { name, scopes: ["runs"] });
    expect(res.status).toBe(201);
    return (await res.json()) as { token_id: string; token: string };
  };

  const pat = await create("revoked next");
  const thread = await call(pat.token, "POST", "/v1/threads", {});
  expect(thread.status).toBe(201);
  const { thread_id } = (await thread.json()) as { thread_id: string };
  const files = await call(pat.token, "POST", `/v1/threads/${thread_id}/files/access`, {
    ops: ["read"],
  });
  expect(files.status).toBe(403);
  expect((await call(p.signInToken, "DELETE", `/v1/tokens/${pat.token_id}`)).status).toBe(204);
  expect((await call(pat.token, "GET", "/v1/threads")).status).toBe(401);

  const expiring = await create("expired next");
  expect((await call(expiring.token, "GET", "/v1/threads")).status).toBe(200);
  await p.sql`update personal_access_tokens set expires_at = now() - interval '1 second'
    where token_id = ${expiring.token_id}`;
  expect((await call(expiring.token, "GET", "/v1/threads")).status).toBe(401);

  const rows = await p.sql`select * from personal_access_tokens`;
  for (const secret of [pat.token, expiring.token].map((t) => t.slice(-43))) {
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(p.output()).not.toContain(secret);
  }
}
