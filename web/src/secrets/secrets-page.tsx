import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { SecretData } from "@workcell/sdk";
import { type FormEvent, useState } from "react";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { RecordTable } from "../ui/record-table.tsx";

/**
 * `/secrets`: add, replace, delete. The value field is write-only: it is sent once and
 * cleared, and no answer ever carries a value back (docs/api.md "Secrets").
 */
export function SecretsPage() {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const secrets = useQuery({
    queryKey: ["secrets"],
    queryFn: ({ signal }) => api.secrets.list(signal),
  });
  const [replacing, setReplacing] = useState<SecretData | undefined>();
  // A fresh (empty) form after each save.
  const [saves, setSaves] = useState(0);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["secrets"] });
  const remove = useMutation({
    mutationFn: (name: string) => api.secrets.remove(name),
    onSuccess: refresh,
  });
  return (
    <section className="page secrets-page">
      <h2>Secrets</h2>
      <p className="muted">
        Credentials your agents use without ever holding them. A sandbox sees <code>$NAME</code> as
        a placeholder (<code>wcs_…</code>); the network proxy puts the real value in, in the header
        you choose, only on requests to the hosts you list, and refuses the placeholder anywhere
        else. Values cannot be read back.
      </p>
      <SecretForm
        key={`${replacing?.name ?? "new"}-${saves}`}
        replacing={replacing}
        onSaved={() => {
          setReplacing(undefined);
          setSaves((n) => n + 1);
          void refresh();
        }}
      />
      <ErrorMessage error={remove.error} title="Delete failed" />
      <RecordTable
        list={secrets}
        noun="secrets"
        headings={["Name", "Hosts", "Sent as", "Updated"]}
        testId="secret-list"
        rowKey={(s) => s.name}
        rowAttributes={(s) => ({ "data-secret": s.name })}
        row={(s) => (
          <>
            <td>
              <code>{s.name}</code>
            </td>
            <td>{s.hosts.join(", ")}</td>
            <td>
              <code>
                {s.header}: {s.template}
              </code>
            </td>
            <td>{new Date(s.updated_at).toLocaleString()}</td>
            <td>
              <button type="button" className="subtle" onClick={() => setReplacing(s)}>
                Replace
              </button>{" "}
              <button
                type="button"
                className="subtle"
                onClick={() => remove.mutate(s.name)}
                disabled={remove.isPending}
              >
                Delete
              </button>
            </td>
          </>
        )}
      />
    </section>
  );
}

function SecretForm(p: { replacing: SecretData | undefined; onSaved: () => void }) {
  const { api } = useConsole();
  const [name, setName] = useState(p.replacing?.name ?? "");
  const [value, setValue] = useState("");
  const [hosts, setHosts] = useState(p.replacing?.hosts.join(", ") ?? "");
  const [header, setHeader] = useState(p.replacing?.header ?? "Authorization");
  const [template, setTemplate] = useState(p.replacing?.template ?? "Bearer {value}");
  const save = useMutation({
    mutationFn: () =>
      api.secrets.set(name.trim(), value, {
        hosts: hosts
          .split(/[\s,]+/)
          .map((h) => h.trim())
          .filter((h) => h.length > 0),
        header: header.trim(),
        template,
      }),
    onSuccess: () => {
      setValue("");
      p.onSaved();
    },
    // The value is not kept after a failed attempt either.
    onError: () => setValue(""),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <form className="card token-form" onSubmit={submit} aria-label="Secret">
      <label>
        Name{" "}
        <input
          value={name}
          onChange={(e) => setName(e.target.value.toUpperCase())}
          placeholder="GITHUB_TOKEN"
          pattern="[A-Z][A-Z0-9_]{0,63}"
          readOnly={p.replacing !== undefined}
          required
        />
      </label>
      <label>
        Value{" "}
        <input
          type="password"
          autoComplete="new-password"
          value={value}
          onChange={(e) => setValue(e.target.value)}
          placeholder={p.replacing === undefined ? "the token" : "the new value"}
          aria-describedby="secret-value-help"
          required
        />
      </label>
      <small id="secret-value-help" className="muted">
        Write-only: it is sent once and never shown again.
      </small>
      <label>
        Hosts{" "}
        <input
          value={hosts}
          onChange={(e) => setHosts(e.target.value)}
          placeholder="api.github.com, github.com"
          required
        />
      </label>
      <label>
        Header <input value={header} onChange={(e) => setHeader(e.target.value)} required />
      </label>
      <label>
        Template <input value={template} onChange={(e) => setTemplate(e.target.value)} required />
      </label>
      <ErrorMessage error={save.error} title="Not saved" />
      <button type="submit" disabled={save.isPending}>
        {p.replacing === undefined ? "Add secret" : `Replace ${p.replacing.name}`}
      </button>
    </form>
  );
}
