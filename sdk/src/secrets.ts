import type { components } from "./generated/api.ts";
import type { CallOptions, Transport } from "./transport.ts";

/** A stored secret, without its value (values are never returned). */
export type SecretData = components["schemas"]["Secret"];

export interface SetSecretOptions extends CallOptions {
  /** Host patterns the proxy sends it to (`api.github.com`, `*.example.com`, `host:8443`). */
  readonly hosts: readonly string[];
  /** Default `Authorization`. */
  readonly header?: string;
  /** Default `Bearer {value}`. */
  readonly template?: string;
}

/**
 * The caller's secrets (docs/api.md "Secrets"): write-only values that sandboxes see only
 * as placeholders; the egress proxy puts the value in on requests to the bound hosts.
 */
export class Secrets {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Creates or replaces `name` (`[A-Z][A-Z0-9_]*`); the next request of any sandbox uses it. */
  set(name: string, value: string, options: SetSecretOptions): Promise<SecretData> {
    return this.#transport.call(
      (api, init) =>
        api.PUT("/v1/secrets/{name}", {
          ...init,
          params: { path: { name } },
          body: {
            value,
            hosts: [...options.hosts],
            ...(options.header === undefined ? {} : { header: options.header }),
            ...(options.template === undefined ? {} : { template: options.template }),
          },
        }),
      options,
    );
  }

  async list(options: CallOptions = {}): Promise<SecretData[]> {
    return (await this.#transport.call((api, init) => api.GET("/v1/secrets", init), options)).items;
  }

  async delete(name: string, options: CallOptions = {}): Promise<void> {
    await this.#transport.call(
      (api, init) => api.DELETE("/v1/secrets/{name}", { ...init, params: { path: { name } } }),
      options,
    );
  }
}
