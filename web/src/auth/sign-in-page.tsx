import { Checkbox, Label } from "radix-ui";
import { type FormEvent, useState } from "react";
import { ErrorMessage } from "../ui/error-message.tsx";
import type { ConsoleConfig } from "./console-config.ts";
import { signInLocally } from "./local-session.ts";
import type { OidcBoot } from "./oidc-boot.tsx";
import type { Session } from "./session.ts";

export function SignInPage(p: {
  config: ConsoleConfig;
  oidc: OidcBoot;
  onSignedIn: (s: Session) => void;
  signedOut: () => void;
}) {
  const [uid, setUid] = useState("alice");
  const [admin, setAdmin] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (p.config.mode !== "local") return;
    setBusy(true);
    setError(undefined);
    try {
      p.onSignedIn(await signInLocally(p.config.dev_token_url, uid.trim(), admin, p.signedOut));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="sign-in">
      <h1>Workcell</h1>
      {p.config.mode === "local" ? (
        <form onSubmit={submit} className="card">
          <p className="muted">
            Local mode: no password. You act as the user id you type (a dev token is minted by this
            machine's Workcell).
          </p>
          <Label.Root htmlFor="uid">User id</Label.Root>
          <input
            id="uid"
            value={uid}
            onChange={(e) => setUid(e.target.value)}
            autoComplete="username"
            required
          />
          <div className="row">
            <Checkbox.Root
              id="admin"
              className="checkbox"
              checked={admin}
              onCheckedChange={(v) => setAdmin(v === true)}
            >
              <Checkbox.Indicator>✓</Checkbox.Indicator>
            </Checkbox.Root>
            <Label.Root htmlFor="admin">Administrator</Label.Root>
          </div>
          <button type="submit" className="primary" disabled={busy || uid.trim() === ""}>
            Continue as {uid.trim() || "…"}
          </button>
          <ErrorMessage error={error} />
        </form>
      ) : (
        <div className="card">
          <button
            type="button"
            className="primary"
            disabled={!p.oidc.checked}
            onClick={() => p.oidc.manager?.signinRedirect().catch(setError)}
          >
            Sign in
          </button>
          <ErrorMessage error={error ?? p.oidc.error} />
        </div>
      )}
    </main>
  );
}
