import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { CreatedPersonalToken, PersonalTokenData, TokenScope } from "@workcell/sdk";
import { type FormEvent, useState } from "react";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { RecordTable } from "../ui/record-table.tsx";

const SCOPES: readonly { scope: TokenScope; label: string }[] = [
  { scope: "runs", label: "runs: threads, runs, attachments, skills, usage" },
  { scope: "files", label: "files: read and write Workdir files" },
  { scope: "admin", label: "admin: the administrator routes" },
];
const EXPIRY_DAYS = [7, 30, 90, 365] as const;

function tokenState(t: PersonalTokenData): string {
  if (t.revoked_at !== null) return "revoked";
  if (t.expires_at !== null && Date.parse(t.expires_at) <= Date.now()) return "expired";
  return "active";
}

/** `/tokens`: personal access tokens for scripts and CI: create (shown once), list, revoke. */
export function TokensPage() {
  const { api, session } = useConsole();
  const queryClient = useQueryClient();
  const tokens = useQuery({
    queryKey: ["tokens"],
    queryFn: ({ signal }) => api.tokens.list(signal),
  });
  const [created, setCreated] = useState<CreatedPersonalToken | undefined>();
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["tokens"] });
  const revoke = useMutation({
    mutationFn: (id: string) => api.tokens.revoke(id),
    onSuccess: refresh,
  });
  return (
    <section className="page tokens-page">
      <h2>Personal access tokens</h2>
      <p className="muted">
        A token lets a script, CI job or the CLI act as you (
        <code>Authorization: Bearer wct_…</code>, or <code>workcell login</code>), with only the
        scopes you give it. It is shown once; Workcell keeps only a hash of it.
      </p>
      <CreateTokenForm
        admin={session.admin}
        onCreated={(t) => {
          setCreated(t);
          void refresh();
        }}
      />
      {created !== undefined && <NewToken token={created} onDone={() => setCreated(undefined)} />}
      <ErrorMessage error={revoke.error} title="Revoke failed" />
      <RecordTable
        list={tokens}
        noun="tokens"
        headings={["Name", "Scopes", "Expires", "Last used", "State"]}
        testId="token-list"
        rowKey={(t) => t.token_id}
        rowAttributes={(t) => ({ "data-token-id": t.token_id })}
        row={(t) => (
          <>
            <td>{t.name}</td>
            <td>{t.scopes.join(", ")}</td>
            <td>{t.expires_at === null ? "never" : new Date(t.expires_at).toLocaleDateString()}</td>
            <td>{t.last_used_at === null ? "never" : new Date(t.last_used_at).toLocaleString()}</td>
            <td data-testid="token-state">{tokenState(t)}</td>
            <td>
              {tokenState(t) === "active" && (
                <button
                  type="button"
                  className="subtle"
                  onClick={() => revoke.mutate(t.token_id)}
                  disabled={revoke.isPending}
                >
                  Revoke
                </button>
              )}
            </td>
          </>
        )}
      />
    </section>
  );
}

function CreateTokenForm(p: { admin: boolean; onCreated: (t: CreatedPersonalToken) => void }) {
  const { api } = useConsole();
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<TokenScope[]>(["runs", "files"]);
  const [days, setDays] = useState<string>("30");
  const create = useMutation({
    mutationFn: () =>
      api.tokens.create(name.trim(), {
        scopes,
        ...(days === "never" ? {} : { expiresInDays: Number(days) }),
      }),
    onSuccess: (t) => {
      setName("");
      p.onCreated(t);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const toggle = (scope: TokenScope) =>
    setScopes((s) => (s.includes(scope) ? s.filter((x) => x !== scope) : [...s, scope]));
  return (
    <form className="card token-form" onSubmit={submit} aria-label="New token">
      <label>
        Name{" "}
        <input value={name} onChange={(e) => setName(e.target.value)} placeholder="ci" required />
      </label>
      <fieldset>
        <legend>Scopes</legend>
        {SCOPES.filter((s) => s.scope !== "admin" || p.admin).map((s) => (
          <label key={s.scope}>
            <input
              type="checkbox"
              checked={scopes.includes(s.scope)}
              onChange={() => toggle(s.scope)}
            />{" "}
            {s.label}
          </label>
        ))}
      </fieldset>
      <label>
        Expires{" "}
        <select value={days} onChange={(e) => setDays(e.target.value)}>
          {EXPIRY_DAYS.map((d) => (
            <option key={d} value={String(d)}>
              in {d} days
            </option>
          ))}
          <option value="never">never</option>
        </select>
      </label>
      <button
        type="submit"
        disabled={create.isPending || name.trim() === "" || scopes.length === 0}
      >
        Create token
      </button>
      <ErrorMessage error={create.error} title="Cannot create the token" />
    </form>
  );
}

function NewToken(p: { token: CreatedPersonalToken; onDone: () => void }) {
  const [copied, setCopied] = useState<"no" | "yes" | "failed">("no");
  // The clipboard can be refused (no permission, no secure context): then the text stays
  // selectable (user-select: all) and the button says so.
  const copy = () =>
    navigator.clipboard.writeText(p.token.token).then(
      () => setCopied("yes"),
      () => setCopied("failed"),
    );
  return (
    <div className="card new-token" role="status" data-testid="new-token">
      <p>
        <strong>{p.token.name}</strong>: copy it now, it is not shown again.
      </p>
      <code className="token-value" data-testid="new-token-value">
        {p.token.token}
      </code>{" "}
      <button type="button" onClick={() => void copy()}>
        {copied === "yes" ? "Copied" : copied === "failed" ? "Copy refused: select it" : "Copy"}
      </button>{" "}
      <button type="button" className="subtle" onClick={p.onDone}>
        Done
      </button>
    </div>
  );
}
