import { Admin } from "./admin.ts";
import { Attachments } from "./attachments.ts";
import { Checkpoints } from "./checkpoints.ts";
import type { components } from "./generated/api.ts";
import { Runs } from "./runs.ts";
import { Secrets } from "./secrets.ts";
import { Skills } from "./skills.ts";
import { Threads } from "./threads.ts";
import { Tokens } from "./tokens.ts";
import { type CallOptions, Transport, type WorkcellOptions } from "./transport.ts";

/** `GET /v1/network`: the caller's network policy in force. */
export type NetworkData = components["schemas"]["EffectiveNetworkPolicy"];

/** `GET /v1/usage`: the caller's workspace bytes and inodes and runs, against their limits. */
export type UsageData = components["schemas"]["Usage"];

/**
 * The Workcell API client.
 *
 * ```ts
 * const workcell = new Workcell({ baseUrl: "http://127.0.0.1:8080", token });
 * const run = await workcell.runs.create("echo hi > outputs/a.txt");
 * for await (const event of run.events()) console.log(event.type);
 * const thread = await workcell.threads.get(run.threadId);
 * console.log(await thread.files.read("outputs/a.txt"));
 * ```
 */
export class Workcell {
  readonly threads: Threads;
  readonly runs: Runs;
  readonly attachments: Attachments;
  /** Checkpoints of a thread's Workdir: undo a run, restore, fork. */
  readonly checkpoints: Checkpoints;
  readonly skills: Skills;
  readonly admin: Admin;
  /** Personal access tokens of the caller (needs a sign-in token). */
  readonly tokens: Tokens;
  /** The caller's secrets (write-only values; sandboxes hold placeholders). */
  readonly secrets: Secrets;
  /** The typed openapi-fetch client, for anything the resources above do not cover. */
  readonly api: Transport["api"];
  readonly #transport: Transport;

  constructor(options: WorkcellOptions = {}) {
    this.#transport = new Transport(options);
    this.api = this.#transport.api;
    this.threads = new Threads(this.#transport);
    this.runs = new Runs(this.#transport);
    this.attachments = new Attachments(this.#transport);
    this.checkpoints = new Checkpoints(this.#transport);
    this.skills = new Skills(this.#transport);
    this.admin = new Admin(this.#transport);
    this.tokens = new Tokens(this.#transport);
    this.secrets = new Secrets(this.#transport);
  }

  get baseUrl(): string {
    return this.#transport.baseUrl;
  }

  /** `GET /v1/healthz` (no token needed). */
  health(options: CallOptions = {}) {
    return this.#transport.call((api, init) => api.GET("/v1/healthz", init), options);
  }

  /**
   * `GET /v1/usage`: the caller's UserWorkspace bytes and inodes (a few seconds old at most)
   * and running and queued runs, with the limits in force.
   */
  usage(options: CallOptions = {}): Promise<UsageData> {
    return this.#transport.call((api, init) => api.GET("/v1/usage", init), options);
  }

  /** `GET /v1/network`: the hosts the caller's sandboxes may reach (runs may narrow it). */
  network(options: CallOptions = {}): Promise<NetworkData> {
    return this.#transport.call((api, init) => api.GET("/v1/network", init), options);
  }
}
