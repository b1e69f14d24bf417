import { UnauthenticatedError } from "./errors.ts";
import type { CallOptions, Transport } from "./transport.ts";

export type FileEntry = {
  readonly name: string;
  readonly type: "file" | "dir";
  readonly size: number;
  readonly mtime: string;
};

/** What `write` and `upload` take. `Blob` covers browser `File`s. */
export type FileData = string | Uint8Array | ArrayBuffer | Blob;
export type UploadFile = { readonly name: string; readonly data: FileData };

/** What fetch takes as a body (named here: the DOM lib is not loaded under Node). */
type Body = NonNullable<RequestInit["body"]>;
type Capability = { baseUrl: string; token: string; expiresAtMs: number };

/** Renew a capability this long before it expires (clock skew, a slow upload's start). */
const RENEW_BEFORE_MS = 30_000;

/**
 * The Workdir of one thread, through the data plane (docs/api.md "Workdir files"). Paths are
 * Workdir-relative (`outputs/a.txt` or `/outputs/a.txt`). The data-plane capability is
 * minted on first use (`POST /v1/threads/{id}/files/access`), reused while valid, renewed
 * shortly before it expires, and once more if the data plane refuses it (401).
 */
export class ThreadFiles {
  readonly #transport: Transport;
  readonly #threadId: string;
  #capability: Promise<Capability> | undefined;

  constructor(transport: Transport, threadId: string) {
    this.#transport = transport;
    this.#threadId = threadId;
  }

  /** The entries of a directory (default the Workdir root). */
  async list(path = "/", options: CallOptions = {}): Promise<FileEntry[]> {
    const res = await this.#request("GET", "/dp/v1/files", path, {}, options);
    return ((await res.json()) as { items: FileEntry[] }).items;
  }

  /** A file's content as text (UTF-8). */
  async read(path: string, options: CallOptions = {}): Promise<string> {
    return (await this.#request("GET", "/dp/v1/files/content", path, {}, options)).text();
  }

  /** A file's content as bytes. */
  async readBytes(path: string, options: CallOptions = {}): Promise<Uint8Array> {
    const res = await this.#request("GET", "/dp/v1/files/content", path, {}, options);
    return new Uint8Array(await res.arrayBuffer());
  }

  /**
   * Creates a file. Never overwrites: an existing name (even a symlink) is a
   * ConflictError and the file stays as it was; a missing parent is a NotFoundError.
   */
  async write(path: string, data: FileData, options: CallOptions = {}): Promise<void> {
    await this.#request(
      "PUT",
      "/dp/v1/files/content",
      path,
      { body: toBody(data), headers: { "Content-Type": "application/octet-stream" } },
      options,
    );
  }

  /** Removes a file or an empty-or-not directory (a symlink as a link, never followed). */
  async delete(path: string, options: CallOptions = {}): Promise<void> {
    await this.#request("DELETE", "/dp/v1/files", path, {}, options);
  }

  /** Creates a directory (its parent must exist). */
  async mkdir(path: string, options: CallOptions = {}): Promise<void> {
    await this.#request("POST", "/dp/v1/dirs", path, {}, options);
  }

  /**
   * Several files into one directory, all or nothing: a bad name, a name twice or an
   * existing name writes none of them.
   */
  async upload(dir: string, files: readonly UploadFile[], options: CallOptions = {}) {
    const form = new FormData();
    for (const file of files) {
      const data = file.data;
      const blob =
        data instanceof Blob
          ? data
          : new Blob([typeof data === "string" ? data : new Uint8Array(data)]);
      form.append("file", blob, file.name);
    }
    await this.#request("POST", "/dp/v1/files/batch", dir, { body: form }, options);
  }

  async #request(
    method: string,
    route: string,
    path: string,
    init: { body?: Body; headers?: Record<string, string> },
    options: CallOptions,
  ): Promise<Response> {
    const send = async (capability: Capability) =>
      this.#transport.fetch(
        `${capability.baseUrl}${route}?path=${encodeURIComponent(workdirPath(path))}`,
        {
          method,
          bearer: capability.token,
          ...init,
          ...(options.signal ? { signal: options.signal } : {}),
        },
      );
    const capability = await this.#current(options);
    try {
      return await send(capability);
    } catch (error) {
      // Revoked keys, a clock ahead of ours: one fresh capability, then the error stands.
      if (!(error instanceof UnauthenticatedError)) throw error;
      this.#capability = undefined;
      return send(await this.#current(options));
    }
  }

  #current(options: CallOptions): Promise<Capability> {
    const cached = this.#capability;
    const fresh = async (): Promise<Capability> => {
      const minted = await this.#transport.call(
        (api, init) =>
          api.POST("/v1/threads/{thread_id}/files/access", {
            ...init,
            params: { path: { thread_id: this.#threadId } },
            body: { ops: ["read", "write", "delete"] },
          }),
        options,
      );
      return {
        baseUrl: minted.base_url.replace(/\/+$/, ""),
        token: minted.token,
        expiresAtMs: Date.parse(minted.expires_at),
      };
    };
    const next = (async () => {
      const capability = cached ? await cached.catch(() => undefined) : undefined;
      if (capability && capability.expiresAtMs - Date.now() > RENEW_BEFORE_MS) return capability;
      return fresh();
    })();
    // A failed mint is not cached: the next call tries again.
    this.#capability = next;
    next.catch(() => {
      if (this.#capability === next) this.#capability = undefined;
    });
    return next;
  }
}

/** `outputs/a.txt` → `/outputs/a.txt`: the data plane wants a leading slash. */
function workdirPath(path: string): string {
  return path.startsWith("/") ? path : `/${path}`;
}

function toBody(data: FileData): Body {
  if (typeof data === "string" || data instanceof Blob) return data;
  // Copies into a plain ArrayBuffer: a view over a SharedArrayBuffer is not a valid body.
  return data instanceof ArrayBuffer ? data : new Uint8Array(data).buffer;
}
