import { type User, UserManager, WebStorageStateStore } from "oidc-client-ts";
import type { ConsoleConfig } from "./console-config.ts";
import type { Session } from "./session.ts";

export const OIDC_CALLBACK_PATH = "/auth/callback";

type OidcConfig = Extract<ConsoleConfig, { mode: "oidc" }>["oidc"];

/** Authorization code + PKCE (oidc-client-ts does PKCE for `response_type: code`). */
export function createUserManager(oidc: OidcConfig): UserManager {
  return new UserManager({
    authority: oidc.authority,
    client_id: oidc.client_id,
    scope: oidc.scope,
    response_type: "code",
    redirect_uri: `${window.location.origin}${OIDC_CALLBACK_PATH}`,
    post_logout_redirect_uri: window.location.origin,
    automaticSilentRenew: true,
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
  });
}

export function oidcSession(manager: UserManager, user: User, onSignOut: () => void): Session {
  return {
    uid: user.profile.sub,
    // Only decides which pages are offered; the API checks the admin claim itself.
    admin: user.profile.admin === true,
    async token() {
      const current = (await manager.getUser()) ?? user;
      if (current.expired) {
        const renewed = await manager.signinSilent();
        if (renewed !== null) return renewed.access_token;
      }
      return current.access_token;
    },
    async signOut() {
      await manager.removeUser();
      onSignOut();
      await manager.signoutRedirect().catch(() => {});
    },
  };
}
