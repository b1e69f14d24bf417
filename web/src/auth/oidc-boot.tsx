import type { UserManager } from "oidc-client-ts";
import { useEffect, useMemo, useRef, useState } from "react";
import { useNavigate } from "react-router";
import { ErrorMessage } from "../ui/error-message.tsx";
import type { ConsoleConfig } from "./console-config.ts";
import { createUserManager, oidcSession } from "./oidc-session.ts";
import type { Session } from "./session.ts";

export type OidcBoot = {
  manager: UserManager | undefined;
  /** Resumes a stored sign-in, or finishes a redirect; undefined until known. */
  checked: boolean;
  error: unknown;
  complete(): Promise<void>;
};

/** In OIDC mode: the UserManager, and the stored user (if any) turned into a Session. */
export function useOidcSession(
  config: ConsoleConfig,
  onSession: (s: Session) => void,
  onSignOut: () => void,
): OidcBoot {
  const manager = useMemo(
    () => (config.mode === "oidc" ? createUserManager(config.oidc) : undefined),
    [config],
  );
  // The callbacks change identity on every render; the effect must run once per manager.
  const callbacks = useRef({ onSession, onSignOut });
  callbacks.current = { onSession, onSignOut };
  const [checked, setChecked] = useState(manager === undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    if (manager === undefined) return;
    manager
      .getUser()
      .then((user) => {
        if (user === null || user.expired) return;
        callbacks.current.onSession(oidcSession(manager, user, callbacks.current.onSignOut));
      })
      .catch(setError)
      .finally(() => setChecked(true));
  }, [manager]);
  return {
    manager,
    checked,
    error,
    async complete() {
      if (manager === undefined) return;
      const user = await manager.signinRedirectCallback();
      callbacks.current.onSession(oidcSession(manager, user, callbacks.current.onSignOut));
    },
  };
}

/** The OIDC redirect target: exchanges the code (PKCE verifier from session storage). */
export function OidcCallback({ oidc }: { oidc: OidcBoot }) {
  const navigate = useNavigate();
  const [error, setError] = useState<unknown>(undefined);
  // The code can be exchanged once; StrictMode and re-renders must not repeat it.
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    oidc
      .complete()
      .then(() => navigate("/", { replace: true }))
      .catch(setError);
  }, [oidc, navigate]);
  if (error !== undefined) return <ErrorMessage error={error} title="Sign-in failed" />;
  return <p className="boot">Signing in…</p>;
}
