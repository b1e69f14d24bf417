import type { TokenScope } from "../../shared/contracts/personal-token.ts";

/**
 * Who is calling: the OIDC subject and whether the admin claim was set. A personal access
 * token adds its scopes and id: it may do only what its scopes cover (require-scope.ts);
 * a sign-in token (OIDC, dev) has no `scopes` and may do everything its user may.
 */
export type Principal = {
  readonly uid: string;
  readonly admin: boolean;
  readonly scopes?: readonly TokenScope[];
  readonly tokenId?: string;
};
