import type { components } from "./generated/api.ts";
import type { CallOptions, Transport } from "./transport.ts";

export type AttachmentData = components["schemas"]["Attachment"];
/** A file to attach; a browser `File` has all three (`name`, `type`, itself as data). */
export type AttachmentUpload = {
  readonly name: string;
  readonly data: Uint8Array | Blob | string;
  /** Default: the Blob's type, else application/octet-stream. */
  readonly contentType?: string;
};

/** How long one presigned PUT may take (large files on a slow link). */
const UPLOAD_TIMEOUT_MS = 10 * 60_000;

/** Attachments (docs/api.md "Attachments"): straight to object storage, then confirmed. */
export class Attachments {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Uploads `files` with presigned PUTs and confirms them into the thread's Workdir
   * (`uploads/<name>`), all or nothing. `parse` (default true) extracts text from PDFs
   * and documents for the agent.
   */
  async upload(
    threadId: string,
    files: readonly AttachmentUpload[],
    options: CallOptions & { parse?: boolean } = {},
  ): Promise<AttachmentData[]> {
    const blobs = files.map((file) => {
      const type =
        file.contentType ??
        (file.data instanceof Blob && file.data.type ? file.data.type : "application/octet-stream");
      const blob =
        file.data instanceof Blob
          ? file.data
          : new Blob([typeof file.data === "string" ? file.data : new Uint8Array(file.data)]);
      return { name: file.name, type, blob };
    });
    const group = await this.#transport.call(
      (api, init) =>
        api.POST("/v1/attachments/uploads", {
          ...init,
          body: {
            files: blobs.map((b) => ({ name: b.name, size: b.blob.size, content_type: b.type })),
          },
        }),
      options,
    );
    await Promise.all(
      group.items.map((item, i) =>
        this.#transport.fetch(item.upload_url, {
          method: item.method,
          headers: item.headers,
          body: blobs[i]?.blob ?? null,
          auth: false,
          timeoutMs: UPLOAD_TIMEOUT_MS,
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      ),
    );
    const confirmed = await this.#transport.call(
      (api, init) =>
        api.POST("/v1/threads/{thread_id}/attachments/confirm", {
          ...init,
          params: { path: { thread_id: threadId } },
          body: {
            group_id: group.group_id,
            items: group.items.map((item) => ({
              file_id: item.file_id,
              ...(options.parse === undefined ? {} : { parse: options.parse }),
            })),
          },
        }),
      options,
    );
    return confirmed.items;
  }

  async list(threadId: string, options: CallOptions = {}): Promise<AttachmentData[]> {
    const body = await this.#transport.call(
      (api, init) =>
        api.GET("/v1/threads/{thread_id}/attachments", {
          ...init,
          params: { path: { thread_id: threadId } },
        }),
      options,
    );
    return body.items;
  }

  async delete(threadId: string, fileId: string, options: CallOptions = {}): Promise<void> {
    await this.#transport.call(
      (api, init) =>
        api.DELETE("/v1/threads/{thread_id}/attachments/{file_id}", {
          ...init,
          params: { path: { thread_id: threadId, file_id: fileId } },
        }),
      options,
    );
  }
}
