import type { Hono } from "hono";
import { z } from "zod";
import { DEV_TOKEN_TTL_SECONDS, mintDevToken } from "../dev-token.ts";
import { LOCAL_DEV_TOKEN_PATH } from "./console-config.ts";
import { isLoopbackRequest } from "./loopback-guard.ts";

const devTokenRequestSchema = z.object({
  uid: z.string().trim().min(1).max(200),
  admin: z.boolean().default(false),
});

function refusal(code: string, message: string) {
  return { error: { code, message } };
}

/**
 * `POST /local/dev-token {uid, admin?}` → `{token, expires_at}`: the console's
 * "continue as <uid>" in local mode. It mints exactly what `npm run token` mints, and
 * exists only in the local one-process Workcell (infra/local), never in a cloud entry.
 * A JSON body is required, which a cross-site form cannot send without a CORS preflight
 * (never answered here); see loopback-guard.ts for the origin checks.
 */
export function registerDevTokenRoute(app: Hono, p: { devJwtSecret: string }): void {
  app.post(LOCAL_DEV_TOKEN_PATH, async (c) => {
    if (!isLoopbackRequest(c)) {
      return c.json(
        refusal("forbidden", "Dev tokens are minted only for pages of this machine (loopback)."),
        403,
      );
    }
    if (!(c.req.header("content-type") ?? "").startsWith("application/json")) {
      return c.json(refusal("invalid_request", 'Send a JSON body: {"uid": "alice"}.'), 400);
    }
    const parsed = devTokenRequestSchema.safeParse(await c.req.json().catch(() => undefined));
    if (!parsed.success) {
      return c.json(
        refusal("invalid_request", 'Body must be {"uid": <non-empty string>, "admin"?: boolean}.'),
        400,
      );
    }
    const token = await mintDevToken(p.devJwtSecret, parsed.data.uid, {
      admin: parsed.data.admin,
    });
    const expiresAt = new Date(Date.now() + DEV_TOKEN_TTL_SECONDS * 1000).toISOString();
    return c.json({ token, expires_at: expiresAt, uid: parsed.data.uid, admin: parsed.data.admin });
  });
}
