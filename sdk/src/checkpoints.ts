import type { components } from "./generated/api.ts";
import type { CallOptions, Transport } from "./transport.ts";

export type CheckpointData = components["schemas"]["Checkpoint"];
export type RestoreResultData = components["schemas"]["RestoreResult"];
export type ForkedThreadData = components["schemas"]["Thread"];

/**
 * Checkpoints of a thread's Workdir (docs/api.md "Checkpoints"): undo a run, restore, fork.
 *
 * ```ts
 * const [before] = await workcell.checkpoints.list(threadId); // newest first
 * const { saved } = await workcell.checkpoints.restore(threadId, before.checkpoint_id);
 * // …and `saved` undoes the restore.
 * ```
 */
export class Checkpoints {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The thread's checkpoints, newest first. */
  async list(threadId: string, options: CallOptions = {}): Promise<CheckpointData[]> {
    const body = await this.#transport.call(
      (api, init) =>
        api.GET("/v1/threads/{thread_id}/checkpoints", {
          ...init,
          params: { path: { thread_id: threadId } },
        }),
      options,
    );
    return body.items;
  }

  /** Checkpoints the Workdir now; 409 while a run of the thread's project is active. */
  create(
    threadId: string,
    options: CallOptions & { label?: string } = {},
  ): Promise<CheckpointData> {
    return this.#transport.call(
      (api, init) =>
        api.POST("/v1/threads/{thread_id}/checkpoints", {
          ...init,
          params: { path: { thread_id: threadId } },
          body: options.label === undefined ? {} : { label: options.label },
        }),
      options,
    );
  }

  /** Makes the Workdir exactly the checkpoint; `saved` is the state it replaced. */
  restore(
    threadId: string,
    checkpointId: string,
    options: CallOptions = {},
  ): Promise<RestoreResultData> {
    return this.#transport.call(
      (api, init) =>
        api.POST("/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/restore", {
          ...init,
          params: { path: { thread_id: threadId, checkpoint_id: checkpointId } },
        }),
      options,
    );
  }

  async delete(threadId: string, checkpointId: string, options: CallOptions = {}): Promise<void> {
    await this.#transport.call(
      (api, init) =>
        api.DELETE("/v1/threads/{thread_id}/checkpoints/{checkpoint_id}", {
          ...init,
          params: { path: { thread_id: threadId, checkpoint_id: checkpointId } },
        }),
      options,
    );
  }

  /** A new thread in a new managed project, from a checkpoint or the current Workdir. */
  fork(
    threadId: string,
    options: CallOptions & { checkpointId?: string; title?: string } = {},
  ): Promise<ForkedThreadData> {
    return this.#transport.call(
      (api, init) =>
        api.POST("/v1/threads/{thread_id}/fork", {
          ...init,
          params: { path: { thread_id: threadId } },
          body: {
            ...(options.checkpointId === undefined ? {} : { checkpoint_id: options.checkpointId }),
            ...(options.title === undefined ? {} : { title: options.title }),
          },
        }),
      options,
    );
  }
}
