import { ConsoleApiError } from "./console-api.ts";

/** How long one API call may take before it is abandoned (streams excepted). */
export const REQUEST_TIMEOUT_MS = 30_000;

export type Transport = {
  /** JSON call to the Workcell API; parses API.md's error shape into ConsoleApiError. */
  json<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T>;
  /** A raw response from any URL (data plane, streams); errors parsed the same way. */
  raw(url: string, init: RequestInit & { timeoutMs?: number }): Promise<Response>;
  apiUrl(path: string): string;
};

export async function errorOf(res: Response): Promise<ConsoleApiError> {
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (body.error?.code !== undefined) {
      return new ConsoleApiError(body.error.code, body.error.message ?? text, res.status);
    }
  } catch {
    // not JSON: fall through with the text
  }
  return new ConsoleApiError(
    `http_${res.status}`,
    text.trim() || `${res.status} ${res.statusText}`,
    res.status,
  );
}

/**
 * The one place the console calls `fetch` (until the SDK replaces this transport): the
 * bearer token is asked for on every call, so a renewed token applies at once.
 */
export function createTransport(p: { baseUrl: string; token: () => Promise<string> }): Transport {
  async function raw(url: string, init: RequestInit & { timeoutMs?: number }) {
    const signals = [
      init.signal,
      init.timeoutMs === undefined ? undefined : AbortSignal.timeout(init.timeoutMs),
    ].filter((s): s is AbortSignal => s != null);
    let res: Response;
    try {
      res = await fetch(url, {
        ...init,
        signal: signals.length > 0 ? AbortSignal.any(signals) : null,
      });
    } catch (error) {
      if (init.signal?.aborted) throw error;
      const timedOut = error instanceof DOMException && error.name === "TimeoutError";
      throw new ConsoleApiError(
        "network",
        timedOut
          ? "The server did not answer in time; try again."
          : "Could not reach the server; check that Workcell is running.",
        0,
      );
    }
    if (!res.ok) throw await errorOf(res);
    return res;
  }
  const apiUrl = (path: string) => `${p.baseUrl}${path}`;
  return {
    apiUrl,
    raw,
    async json<T>(method: string, path: string, body?: unknown, signal?: AbortSignal) {
      const headers: Record<string, string> = { authorization: `Bearer ${await p.token()}` };
      if (body !== undefined) headers["content-type"] = "application/json";
      const res = await raw(apiUrl(path), {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        signal: signal ?? null,
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      if (res.status === 204) return undefined as T;
      return (await res.json()) as T;
    },
  };
}
