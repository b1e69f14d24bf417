import type { components } from "./generated/api.ts";
import type { CallOptions, Transport } from "./transport.ts";

export type ApprovalData = components["schemas"]["Approval"];
export type ApprovalStatus = ApprovalData["status"];

export interface DecideOptions extends CallOptions {
  /** Shown to the agent with a denial, and kept with the decision. */
  readonly note?: string;
}

/** One action of a run that waits (or waited) for a person (docs/api.md "Approvals"). */
export class Approval {
  readonly #transport: Transport;
  /** The approval as last fetched or decided. */
  data: ApprovalData;

  constructor(transport: Transport, data: ApprovalData) {
    this.#transport = transport;
    this.data = data;
  }

  get id(): string {
    return this.data.approval_id;
  }
  get runId(): string {
    return this.data.run_id;
  }
  get status(): ApprovalStatus {
    return this.data.status;
  }

  /**
   * Lets the call run: this once, or (`scope: "run"`) the same tool for the rest of the
   * run. A second decision throws ConflictError.
   */
  async approve(options: DecideOptions & { readonly scope?: "once" | "run" } = {}) {
    return this.#decide("approve", options);
  }

  /** Refuses the call: the agent gets the refusal (the `shell` model's run fails). */
  async deny(options: DecideOptions = {}): Promise<ApprovalData> {
    return this.#decide("deny", options);
  }

  async #decide(
    decision: "approve" | "deny",
    options: DecideOptions & { readonly scope?: "once" | "run" },
  ): Promise<ApprovalData> {
    this.data = await this.#transport.call(
      (api, init) =>
        api.POST("/v1/runs/{run_id}/approvals/{approval_id}", {
          ...init,
          params: { path: { run_id: this.runId, approval_id: this.id } },
          body: {
            decision,
            ...(options.scope === undefined ? {} : { scope: options.scope }),
            ...(options.note === undefined ? {} : { note: options.note }),
          },
        }),
      options,
    );
    return this.data;
  }
}

/** A run's approvals, oldest first. */
export async function listApprovals(
  transport: Transport,
  runId: string,
  options: CallOptions = {},
): Promise<Approval[]> {
  const body = await transport.call(
    (api, init) =>
      api.GET("/v1/runs/{run_id}/approvals", { ...init, params: { path: { run_id: runId } } }),
    options,
  );
  return body.items.map((item) => new Approval(transport, item));
}
