import type { Session } from "./session.ts";

const STORAGE_KEY = "workcell.local-session";

type Stored = { uid: string; admin: boolean; token: string; expires_at: string };

/** Thrown when the dev-token endpoint refuses; carries the server's message. */
export class SignInError extends Error {
  override readonly name = "SignInError";
}

function toSession(stored: Stored, onSignOut: () => void): Session {
  return {
    uid: stored.uid,
    admin: stored.admin,
    token: async () => stored.token,
    async signOut() {
      localStorage.removeItem(STORAGE_KEY);
      onSignOut();
    },
  };
}

/** The stored local session (kept across reloads) unless it expired. */
export function restoreLocalSession(onSignOut: () => void): Session | undefined {
  try {
    const stored = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "null") as Stored | null;
    if (stored === null || Date.parse(stored.expires_at) <= Date.now()) return undefined;
    return toSession(stored, onSignOut);
  } catch {
    return undefined;
  }
}

/**
 * "Continue as <uid>" (local mode only): the local Workcell's same-origin dev-token
 * endpoint mints what `npm run token` mints. A production deployment has no such endpoint
 * and its /config.json says `oidc`, so this code is never reached there.
 */
export async function signInLocally(
  devTokenUrl: string,
  uid: string,
  admin: boolean,
  onSignOut: () => void,
): Promise<Session> {
  const res = await fetch(devTokenUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ uid, admin }),
  });
  const body = (await res.json().catch(() => ({}))) as Partial<Stored> & {
    error?: { message?: string };
  };
  if (!res.ok || body.token === undefined) {
    throw new SignInError(body.error?.message ?? `Sign-in failed (${res.status}).`);
  }
  const stored: Stored = {
    uid,
    admin,
    token: body.token,
    expires_at: body.expires_at ?? new Date(Date.now() + 3600_000).toISOString(),
  };
  localStorage.setItem(STORAGE_KEY, JSON.stringify(stored));
  return toSession(stored, onSignOut);
}
