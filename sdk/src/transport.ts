import createClient, { type Client } from "openapi-fetch";
import { connectionError, errorFromResponse, readError } from "./errors.ts";
import type { paths } from "./generated/api.ts";

/** A bearer token, or a function returning a fresh one (called per request). */
export type TokenSource = string | (() => string | Promise<string>);

export interface WorkcellOptions {
  /** The API's base URL, e.g. https://workcell.example.com (default: WORKCELL_BASE_URL, then http://127.0.0.1:8080). */
  readonly baseUrl?: string;
  /** The caller's token (default: WORKCELL_TOKEN). */
  readonly token?: TokenSource;
  /** Per-request time limit for ordinary calls (not event streams); default 30 s. */
  readonly timeoutMs?: number;
  /** A fetch implementation (default: the global one). */
  readonly fetch?: typeof fetch;
}

/** Options every call takes. */
export interface CallOptions {
  readonly signal?: AbortSignal;
}

export const DEFAULT_BASE_URL = "http://127.0.0.1:8080";
export const DEFAULT_TIMEOUT_MS = 30_000;

type ApiResult<T> = { data?: T; error?: unknown; response: Response };

/**
 * What every resource shares: the typed openapi-fetch client over the generated paths,
 * the token, the time limit and error mapping. Explicit option, then environment (only
 * where a `process` exists: browsers have none), then default.
 */
export class Transport {
  readonly baseUrl: string;
  readonly api: Client<paths>;
  readonly #token: TokenSource | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: WorkcellOptions = {}) {
    const env = environment();
    this.baseUrl = (options.baseUrl ?? env.WORKCELL_BASE_URL ?? DEFAULT_BASE_URL).replace(
      /\/+$/,
      "",
    );
    this.#token = options.token ?? env.WORKCELL_TOKEN;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    // Late-bound: a page may replace window.fetch after the client was made.
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    const fetchOnce = this.#fetch;
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      fetch: (request: Request) => fetchOnce(request),
    });
    this.api.use({
      onRequest: async ({ request }) => {
        const token = await this.token();
        if (token !== undefined) request.headers.set("Authorization", `Bearer ${token}`);
        return request;
      },
    });
  }

  async token(): Promise<string | undefined> {
    const source = this.#token;
    return typeof source === "function" ? source() : source;
  }

  /** The caller's signal combined with the per-request time limit. */
  signal(signal?: AbortSignal, timeoutMs = this.#timeoutMs): AbortSignal {
    const timeout = AbortSignal.timeout(timeoutMs);
    return signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
  }

  /**
   * One typed API call: `call((api, init) => api.GET("/v1/runs/{run_id}", { ...init, params }))`.
   * Returns the 2xx body; throws the catalogue's error class otherwise.
   */
  async call<T>(
    send: (api: Client<paths>, init: { signal: AbortSignal }) => Promise<ApiResult<T>>,
    options: CallOptions = {},
  ): Promise<T> {
    const signal = this.signal(options.signal);
    let result: ApiResult<T>;
    try {
      result = await send(this.api, { signal });
    } catch (error) {
      throw connectionError(error, this.baseUrl, options.signal ?? signal);
    }
    if (!result.response.ok) throw errorFromResponse(result.response, result.error);
    return result.data as T;
  }

  /**
   * A raw request (event streams, the data plane): the token is added when `auth` is
   * true; a non-2xx answer throws its typed error. No time limit unless `timeoutMs`.
   */
  async fetch(
    url: string,
    init: RequestInit & { auth?: boolean; bearer?: string; timeoutMs?: number } = {},
  ): Promise<Response> {
    const { auth = true, bearer, timeoutMs, ...rest } = init;
    const headers = new Headers(rest.headers);
    const token = bearer ?? (auth ? await this.token() : undefined);
    if (token !== undefined) headers.set("Authorization", `Bearer ${token}`);
    const callerSignal = rest.signal ?? undefined;
    const signal =
      timeoutMs === undefined ? callerSignal : this.signal(callerSignal ?? undefined, timeoutMs);
    let response: Response;
    try {
      response = await this.#fetch(url, { ...rest, headers, ...(signal ? { signal } : {}) });
    } catch (error) {
      throw connectionError(error, url, signal ?? undefined);
    }
    if (!response.ok) throw await readError(response);
    return response;
  }
}

function environment(): Record<string, string | undefined> {
  const processLike = (globalThis as { process?: { env?: Record<string, string | undefined> } })
    .process;
  return processLike?.env ?? {};
}
