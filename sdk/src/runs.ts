import { type Approval, listApprovals } from "./approvals.ts";
import type { components } from "./generated/api.ts";
import { type RunEvent, type RunEventsOptions, runEvents } from "./run-events.ts";
import type { CallOptions, Transport } from "./transport.ts";

/** One connection of a run's sandbox through the egress proxy. */
export type NetworkRequestData = components["schemas"]["NetworkRequest"];

export type RunData = components["schemas"]["Run"];
export type RunStatus = RunData["status"];
export type RunChange = {
  readonly path: string;
  readonly change: "added" | "modified" | "deleted";
  readonly size: number;
};
export type AgentOptions = NonNullable<components["schemas"]["RunSubmitRequest"]["agent"]>;

export interface CreateRunOptions extends CallOptions {
  /** Run in this thread; without it a new thread (and implicit project) is created. */
  readonly threadId?: string;
  /** For a new thread: its project (default: a new implicit one) and title. */
  readonly projectId?: string;
  readonly title?: string;
  readonly agent?: AgentOptions;
  /** Retries with the same key return the same run instead of starting another. */
  readonly idempotencyKey?: string;
}

export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "cancelled"];

/** One run: its last known state, and what can be done with it. */
export class Run {
  readonly #transport: Transport;
  /** The run as last fetched (`refresh()`, `wait()` update it). */
  data: RunData;

  constructor(transport: Transport, data: RunData) {
    this.#transport = transport;
    this.data = data;
  }

  get id(): string {
    return this.data.run_id;
  }
  get threadId(): string {
    return this.data.thread_id;
  }
  get status(): RunStatus {
    return this.data.status;
  }

  /** Its events, live, resuming after dropped connections (see runEvents). */
  events(options: RunEventsOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    return runEvents(this.#transport, this.id, options);
  }

  /** Follows the events to the end, then returns the finished run. */
  async wait(
    options: CallOptions & { onEvent?: (event: RunEvent) => void } = {},
  ): Promise<RunData> {
    for await (const event of this.events(options.signal ? { signal: options.signal } : {})) {
      options.onEvent?.(event);
    }
    return this.refresh(options);
  }

  async refresh(options: CallOptions = {}): Promise<RunData> {
    this.data = await this.#transport.call(
      (api, init) =>
        api.GET("/v1/runs/{run_id}", { ...init, params: { path: { run_id: this.id } } }),
      options,
    );
    return this.data;
  }

  /** Asks the run to stop (idempotent); a finished run throws ConflictError. */
  async cancel(options: CallOptions = {}): Promise<RunData> {
    this.data = await this.#transport.call(
      (api, init) =>
        api.POST("/v1/runs/{run_id}/cancel", {
          ...init,
          params: { path: { run_id: this.id } },
          body: {},
        }),
      options,
    );
    return this.data;
  }

  /** Files the run changed in its Workdir; `truncated` when the list is not complete. */
  async changes(options: CallOptions = {}): Promise<{ items: RunChange[]; truncated: boolean }> {
    const body = await this.#transport.call(
      (api, init) =>
        api.GET("/v1/runs/{run_id}/changes", { ...init, params: { path: { run_id: this.id } } }),
      options,
    );
    const { items, truncated } = body as { items: RunChange[]; truncated?: boolean };
    return { items, truncated: truncated ?? false };
  }

  /** The connections the run's sandbox asked for, allowed and refused (oldest first). */
  async network(
    options: CallOptions = {},
  ): Promise<{ items: NetworkRequestData[]; truncated: boolean }> {
    return this.#transport.call(
      (api, init) =>
        api.GET("/v1/runs/{run_id}/network", { ...init, params: { path: { run_id: this.id } } }),
      options,
    );
  }

  /** Its approvals (pending and decided), oldest first; approve or deny the pending one. */
  async approvals(options: CallOptions = {}): Promise<Approval[]> {
    return listApprovals(this.#transport, this.id, options);
  }

  /** A URL for `new EventSource(url)` (browsers: no Authorization header needed), ≤ 1 h. */
  async eventsTicket(options: CallOptions = {}): Promise<{ url: string; expiresAt: Date }> {
    const ticket = await this.#transport.call(
      (api, init) =>
        api.POST("/v1/runs/{run_id}/events/ticket", {
          ...init,
          params: { path: { run_id: this.id } },
        }),
      options,
    );
    return { url: ticket.url, expiresAt: new Date(ticket.expires_at) };
  }
}

export class Runs {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Starts a run: in `threadId`, or in a new thread. Returns at once (status `pending`). */
  async create(input: string, options: CreateRunOptions = {}): Promise<Run> {
    const header = options.idempotencyKey ? { "idempotency-key": options.idempotencyKey } : {};
    const agent = options.agent ? { agent: options.agent } : {};
    if (options.threadId !== undefined) {
      const threadId = options.threadId;
      const data = await this.#transport.call(
        (api, init) =>
          api.POST("/v1/threads/{thread_id}/runs", {
            ...init,
            params: { path: { thread_id: threadId }, header },
            body: { input, ...agent },
          }),
        options,
      );
      return new Run(this.#transport, data);
    }
    const created = await this.#transport.call(
      (api, init) =>
        api.POST("/v1/runs", {
          ...init,
          params: { header },
          body: {
            input,
            ...agent,
            ...(options.projectId ? { project_id: options.projectId } : {}),
            ...(options.title ? { title: options.title } : {}),
          },
        }),
      options,
    );
    return new Run(this.#transport, created.run);
  }

  async get(runId: string, options: CallOptions = {}): Promise<Run> {
    const data = await this.#transport.call(
      (api, init) => api.GET("/v1/runs/{run_id}", { ...init, params: { path: { run_id: runId } } }),
      options,
    );
    return new Run(this.#transport, data);
  }
}
