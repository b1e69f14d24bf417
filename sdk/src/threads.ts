import { Attachments, type AttachmentUpload } from "./attachments.ts";
import type { components } from "./generated/api.ts";
import { type CreateRunOptions, type Run, Runs } from "./runs.ts";
import { ThreadFiles } from "./thread-files.ts";
import type { CallOptions, Transport } from "./transport.ts";

export type ThreadData = components["schemas"]["Thread"];
export type ThreadPage = { items: Thread[]; nextCursor: string | null };

export interface CreateThreadOptions extends CallOptions {
  readonly projectId?: string;
  readonly title?: string;
  readonly parentThreadId?: string;
  readonly idempotencyKey?: string;
}

/** One conversation: its runs and its Workdir's files. */
export class Thread {
  readonly #transport: Transport;
  readonly data: ThreadData;
  /** The Workdir's files through the data plane (capability minted and renewed for you). */
  readonly files: ThreadFiles;

  constructor(transport: Transport, data: ThreadData) {
    this.#transport = transport;
    this.data = data;
    this.files = new ThreadFiles(transport, data.thread_id);
  }

  get id(): string {
    return this.data.thread_id;
  }

  /** Starts a run in this thread. */
  run(input: string, options: Omit<CreateRunOptions, "threadId"> = {}): Promise<Run> {
    return new Runs(this.#transport).create(input, { ...options, threadId: this.id });
  }

  /** Uploads files as attachments of this thread (presigned PUT, then confirm). */
  attach(files: readonly AttachmentUpload[], options: CallOptions & { parse?: boolean } = {}) {
    return new Attachments(this.#transport).upload(this.id, files, options);
  }
}

export class Threads {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  async create(options: CreateThreadOptions = {}): Promise<Thread> {
    const data = await this.#transport.call(
      (api, init) =>
        api.POST("/v1/threads", {
          ...init,
          params: {
            header: options.idempotencyKey ? { "idempotency-key": options.idempotencyKey } : {},
          },
          body: {
            ...(options.projectId ? { project_id: options.projectId } : {}),
            ...(options.title ? { title: options.title } : {}),
            ...(options.parentThreadId ? { parent_thread_id: options.parentThreadId } : {}),
          },
        }),
      options,
    );
    return new Thread(this.#transport, data);
  }

  /** One page, newest first; pass `nextCursor` back as `cursor` for the next. */
  async list(options: CallOptions & { cursor?: string; limit?: number } = {}): Promise<ThreadPage> {
    const page = await this.#transport.call(
      (api, init) =>
        api.GET("/v1/threads", {
          ...init,
          params: {
            query: {
              ...(options.cursor ? { cursor: options.cursor } : {}),
              ...(options.limit ? { limit: options.limit } : {}),
            },
          },
        }),
      options,
    );
    return {
      items: page.items.map((data) => new Thread(this.#transport, data)),
      nextCursor: page.next_cursor,
    };
  }

  /** Every thread, page after page. */
  async *all(options: CallOptions = {}): AsyncGenerator<Thread> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...options, ...(cursor ? { cursor } : {}) });
      yield* page.items;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** A thread of the caller; another user's (or a deleted one) is a NotFoundError. */
  async get(threadId: string, options: CallOptions = {}): Promise<Thread> {
    const data = await this.#transport.call(
      (api, init) =>
        api.GET("/v1/threads/{thread_id}", {
          ...init,
          params: { path: { thread_id: threadId } },
        }),
      options,
    );
    return new Thread(this.#transport, data);
  }

  /** Soft-deletes a thread; ConflictError while one of its runs is active. */
  async delete(threadId: string, options: CallOptions = {}): Promise<void> {
    await this.#transport.call(
      (api, init) =>
        api.DELETE("/v1/threads/{thread_id}", {
          ...init,
          params: { path: { thread_id: threadId } },
        }),
      options,
    );
  }
}
