import { AdminSkills } from "./skills.ts";
import type { CallOptions, Transport } from "./transport.ts";

/** `GET /v1/admin/nodes` items (API.md "Nodes and runtimes"). */
export type NodeData = {
  readonly node_id: string;
  readonly state: "active" | "quiesced" | "lost";
  readonly heartbeat_at: string;
  readonly sandbox_tiers: unknown;
  readonly live_sandboxes: number;
  readonly running_runs: number;
};

/** `GET/PUT /v1/admin/users/{uid}/limits` (API.md "Limits and usage"); unset = default. */
export type UserLimits = {
  workspace_bytes?: number;
  workspace_inodes?: number;
  max_concurrent_runs?: number;
  requests_per_minute?: number;
};

/**
 * Operator calls (admin tokens only; ForbiddenError otherwise). Nodes, limits and runtime
 * are typed from API.md by hand until their routes are in this SDK's OpenAPI document: a
 * deployment without them answers NotFoundError.
 */
export class Admin {
  readonly #transport: Transport;
  readonly skills: AdminSkills;

  constructor(transport: Transport) {
    this.#transport = transport;
    this.skills = new AdminSkills(transport);
  }

  async nodes(options: CallOptions = {}): Promise<NodeData[]> {
    return (
      (await this.#json("GET", "/v1/admin/nodes", undefined, options)) as { items: NodeData[] }
    ).items;
  }

  async quiesceNode(nodeId: string, options: CallOptions = {}): Promise<void> {
    await this.#json("POST", `/v1/admin/nodes/${encodeURIComponent(nodeId)}/quiesce`, {}, options);
  }

  async resumeNode(nodeId: string, options: CallOptions = {}): Promise<void> {
    await this.#json("POST", `/v1/admin/nodes/${encodeURIComponent(nodeId)}/resume`, {}, options);
  }

  async limits(uid: string, options: CallOptions = {}): Promise<UserLimits> {
    return (await this.#json(
      "GET",
      `/v1/admin/users/${encodeURIComponent(uid)}/limits`,
      undefined,
      options,
    )) as UserLimits;
  }

  async setLimits(uid: string, limits: UserLimits, options: CallOptions = {}): Promise<UserLimits> {
    return (await this.#json(
      "PUT",
      `/v1/admin/users/${encodeURIComponent(uid)}/limits`,
      limits,
      options,
    )) as UserLimits;
  }

  async runtime(options: CallOptions = {}): Promise<unknown> {
    return this.#json("GET", "/v1/admin/runtime", undefined, options);
  }

  async #json(method: string, path: string, body: unknown, options: CallOptions): Promise<unknown> {
    const res = await this.#transport.fetch(`${this.#transport.baseUrl}${path}`, {
      method,
      timeoutMs: 30_000,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { "Content-Type": "application/json" } }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const text = await res.text();
    return text.length === 0 ? undefined : JSON.parse(text);
  }
}
