import type { WorkdirFiles } from "./console-api.ts";
import { REQUEST_TIMEOUT_MS, type Transport } from "./http-transport.ts";
import type { FileEntry } from "./types.ts";

/** Renew a capability this long before it expires, so no call carries a stale one. */
export const CAPABILITY_RENEW_MARGIN_MS = 15_000;

type Capability = { base_url: string; token: string; expires_at: string };

/**
 * A thread's Workdir through the data plane: one capability for read, write and delete,
 * minted by POST /v1/threads/{id}/files/access and renewed before it expires.
 */
export function createWorkdirFiles(t: Transport, threadId: string): WorkdirFiles {
  let current: Promise<Capability> | undefined;
  async function capability(): Promise<Capability> {
    const held = current === undefined ? undefined : await current.catch(() => undefined);
    if (
      held !== undefined &&
      Date.parse(held.expires_at) - Date.now() > CAPABILITY_RENEW_MARGIN_MS
    ) {
      return held;
    }
    current = t.json<Capability>("POST", `/v1/threads/${threadId}/files/access`, {
      ops: ["read", "write", "delete"],
    });
    return current;
  }
  async function call(method: string, route: string, path: string, init: RequestInit = {}) {
    const cap = await capability();
    const url = `${cap.base_url}${route}?path=${encodeURIComponent(path)}`;
    return t.raw(url, {
      ...init,
      method,
      headers: {
        ...(init.headers as Record<string, string>),
        authorization: `Bearer ${cap.token}`,
      },
      timeoutMs: REQUEST_TIMEOUT_MS * 10,
    });
  }
  return {
    async list(path, signal) {
      const res = await call("GET", "/dp/v1/files", path, { signal: signal ?? null });
      return ((await res.json()) as { items: FileEntry[] }).items;
    },
    async read(path, signal) {
      return (await call("GET", "/dp/v1/files/content", path, { signal: signal ?? null })).blob();
    },
    async write(path, body, signal) {
      await call("PUT", "/dp/v1/files/content", path, {
        body,
        headers: { "content-type": "application/octet-stream" },
        signal: signal ?? null,
      });
    },
    async mkdir(path, signal) {
      await call("POST", "/dp/v1/dirs", path, { signal: signal ?? null });
    },
    async delete(path, signal) {
      await call("DELETE", "/dp/v1/files", path, { signal: signal ?? null });
    },
  };
}
