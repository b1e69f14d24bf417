import type { components } from "./generated/api.ts";
import { AdminSkills } from "./skills.ts";
import type { CallOptions, Transport } from "./transport.ts";

/** `GET /v1/admin/nodes` items (docs/api.md "Nodes and runtimes"). */
export type NodeData = components["schemas"]["AdminNode"];
/** `GET /v1/admin/runtime` items: each sandbox tier's preflight, each Runtime Asset's check. */
export type NodeRuntimeData = components["schemas"]["AdminNodeRuntime"];
/** The limits in force for a user: an admin's override, else the deployment's default. */
export type UserLimits = components["schemas"]["UserLimits"];
/** What an admin sets; a field left out takes the deployment's default. */
export type UserLimitsOverride = components["schemas"]["UserLimitsOverride"];
/** `GET/PUT /v1/admin/users/{uid}/limits`: both, so a reader sees which are defaults. */
export type UserLimitsData = components["schemas"]["AdminUserLimits"];

/** A network policy: `none`, or an allow-list of host patterns (docs/api.md "Network policy"). */
export type NetworkPolicy = components["schemas"]["NetworkPolicy"];
/** `GET/PUT /v1/admin/users/{uid}/network`: the user's ceiling and where it comes from. */
export type UserNetworkData = components["schemas"]["AdminNetworkPolicy"];

/** Operator calls (admin tokens only; ForbiddenError otherwise). */
export class Admin {
  readonly #transport: Transport;
  readonly skills: AdminSkills;

  constructor(transport: Transport) {
    this.#transport = transport;
    this.skills = new AdminSkills(transport);
  }

  async nodes(options: CallOptions = {}): Promise<NodeData[]> {
    const list = await this.#transport.call(
      (api, init) => api.GET("/v1/admin/nodes", init),
      options,
    );
    return list.items;
  }

  /** The node takes no new sandboxes and drains the ones it has. */
  quiesceNode(nodeId: string, options: CallOptions = {}): Promise<void> {
    return this.#nodeState(nodeId, "quiesce", options);
  }

  resumeNode(nodeId: string, options: CallOptions = {}): Promise<void> {
    return this.#nodeState(nodeId, "resume", options);
  }

  /** Per node: is each sandbox tier ready, and each Runtime Asset (bash, python3, ...)? */
  async runtime(options: CallOptions = {}): Promise<NodeRuntimeData[]> {
    const list = await this.#transport.call(
      (api, init) => api.GET("/v1/admin/runtime", init),
      options,
    );
    return list.items;
  }

  async limits(uid: string, options: CallOptions = {}): Promise<UserLimitsData> {
    return this.#transport.call(
      (api, init) =>
        api.GET("/v1/admin/users/{uid}/limits", { ...init, params: { path: { uid } } }),
      options,
    );
  }

  /** Replaces the user's overrides: a field left out goes back to the default. */
  async setLimits(
    uid: string,
    overrides: UserLimitsOverride,
    options: CallOptions = {},
  ): Promise<UserLimitsData> {
    return this.#transport.call(
      (api, init) =>
        api.PUT("/v1/admin/users/{uid}/limits", {
          ...init,
          params: { path: { uid } },
          body: overrides,
        }),
      options,
    );
  }

  /** The user's network ceiling (`source: "default"` when no admin set one). */
  async network(uid: string, options: CallOptions = {}): Promise<UserNetworkData> {
    return this.#transport.call(
      (api, init) =>
        api.GET("/v1/admin/users/{uid}/network", { ...init, params: { path: { uid } } }),
      options,
    );
  }

  /** Sets the user's network ceiling; it applies to the user's next connection, on every node. */
  async setNetwork(
    uid: string,
    policy: NetworkPolicy,
    options: CallOptions = {},
  ): Promise<UserNetworkData> {
    return this.#transport.call(
      (api, init) =>
        api.PUT("/v1/admin/users/{uid}/network", {
          ...init,
          params: { path: { uid } },
          body: policy,
        }),
      options,
    );
  }

  async #nodeState(nodeId: string, to: "quiesce" | "resume", options: CallOptions) {
    await this.#transport.call(
      (api, init) =>
        api.POST(`/v1/admin/nodes/{node_id}/${to}`, {
          ...init,
          params: { path: { node_id: nodeId } },
        }),
      options,
    );
  }
}
