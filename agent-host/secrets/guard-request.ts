import { type BodyGuard, createBodyGuard } from "./body-guard.ts";
import type { Headers, SandboxSecrets } from "./sandbox-secrets.ts";

export type GuardedRequest =
  | { readonly ok: true; readonly headers: Headers; readonly body: BodyGuard | undefined }
  | { readonly ok: false; readonly status: 403 | 503; readonly reason: string };

/**
 * What one request of a sandbox may send (decisions 0133, 0134): its headers with the
 * values of the secrets bound to `host:port`, and a guard for its body against the
 * placeholders that may not go there; or a refusal: `secret_exfiltration` (403) when a
 * placeholder is on its way to a host its secret does not bind, `secrets_unavailable`
 * (503) when the user's secrets cannot be read now (nothing is sent: closed, never open).
 */
export async function guardRequest(
  secrets: SandboxSecrets | undefined,
  target: { host: string; port: number; url: string; headers: Headers },
  signal: AbortSignal,
): Promise<GuardedRequest> {
  if (secrets === undefined || secrets.placeholders.size === 0)
    return { ok: true, headers: target.headers, body: undefined };
  try {
    const rewritten = await secrets.rewrite(target, signal);
    if (!rewritten.ok) return { ok: false, status: 403, reason: rewritten.reason };
    const needles = rewritten.forbidden;
    return {
      ok: true,
      headers: rewritten.headers,
      body: needles.length === 0 ? undefined : createBodyGuard(needles),
    };
  } catch {
    return { ok: false, status: 503, reason: "secrets_unavailable" };
  }
}
