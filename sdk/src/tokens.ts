import type { components } from "./generated/api.ts";
import type { CallOptions, Transport } from "./transport.ts";

export type PersonalTokenData = components["schemas"]["PersonalToken"];
export type CreatedPersonalToken = components["schemas"]["CreatedPersonalToken"];
export type TokenScope = PersonalTokenData["scopes"][number];

export interface CreateTokenOptions extends CallOptions {
  /** Default ["runs", "files"]; "admin" only for an admin. */
  readonly scopes?: readonly TokenScope[];
  /** Days until it stops working; without it, it never expires. */
  readonly expiresInDays?: number;
}

/**
 * Personal access tokens (`wct_…`) for scripts and CI. Managing them needs a sign-in token
 * (OIDC, or a dev token locally): a client using a PAT gets ForbiddenError here.
 */
export class Tokens {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The new token is in `token`, this once: store it now; the server keeps only a hash. */
  create(name: string, options: CreateTokenOptions = {}): Promise<CreatedPersonalToken> {
    return this.#transport.call(
      (api, init) =>
        api.POST("/v1/tokens", {
          ...init,
          body: {
            name,
            ...(options.scopes === undefined ? {} : { scopes: [...options.scopes] }),
            ...(options.expiresInDays === undefined
              ? {}
              : { expires_in_days: options.expiresInDays }),
          },
        }),
      options,
    );
  }

  async list(options: CallOptions = {}): Promise<PersonalTokenData[]> {
    return (await this.#transport.call((api, init) => api.GET("/v1/tokens", init), options)).items;
  }

  /** Stops the token at once (its next request is 401); revoking twice is fine. */
  async revoke(tokenId: string, options: CallOptions = {}): Promise<void> {
    await this.#transport.call(
      (api, init) =>
        api.DELETE("/v1/tokens/{token_id}", { ...init, params: { path: { token_id: tokenId } } }),
      options,
    );
  }
}
