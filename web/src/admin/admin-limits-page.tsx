import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { UserLimitsData, UserLimitsOverride } from "@workcell/sdk";
import { Label } from "radix-ui";
import { type FormEvent, useEffect, useState } from "react";
import { useNavigate, useParams } from "react-router";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { AdminPage } from "./admin-page.tsx";
import { LIMITS, type LimitName } from "./limit-names.ts";
import { UserNetworkCard } from "./user-network-card.tsx";

/** `/admin/limits/<uid>`: one user's limits in force, which an admin set, and a form to change them. */
export function AdminLimitsPage() {
  const { uid } = useParams();
  const navigate = useNavigate();
  const [lookup, setLookup] = useState(uid ?? "");
  useEffect(() => setLookup(uid ?? ""), [uid]);
  const onLookup = (e: FormEvent) => {
    e.preventDefault();
    const next = lookup.trim();
    if (next !== "") navigate(`/admin/limits/${encodeURIComponent(next)}`);
  };
  return (
    <AdminPage title="Limits">
      <form className="row lookup" onSubmit={onLookup} aria-label="Find a user">
        <Label.Root htmlFor="limits-uid">User id</Label.Root>
        <input
          id="limits-uid"
          value={lookup}
          onChange={(e) => setLookup(e.target.value)}
          required
        />
        <button type="submit">Show limits</button>
      </form>
      {uid === undefined ? (
        <p className="empty">
          Enter a user id to see the limits in force for that user and change them.
        </p>
      ) : (
        <>
          <UserLimitsCard uid={uid} />
          <UserNetworkCard uid={uid} />
        </>
      )}
    </AdminPage>
  );
}

function UserLimitsCard({ uid }: { uid: string }) {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const limits = useQuery({
    queryKey: ["admin-limits", uid],
    queryFn: ({ signal }) => api.admin.limits(uid, signal),
  });
  const save = useMutation({
    mutationFn: (overrides: UserLimitsOverride) => api.admin.setLimits(uid, overrides),
    onSuccess: (data) => queryClient.setQueryData(["admin-limits", uid], data),
  });
  if (limits.isPending) return <p className="muted">Loading limits of {uid}…</p>;
  if (limits.isError) return <ErrorMessage error={limits.error} />;
  return (
    <LimitsForm
      key={JSON.stringify(limits.data.overrides)}
      data={limits.data}
      saving={save.isPending}
      saved={save.isSuccess}
      error={save.error}
      onSave={(overrides) => save.mutate(overrides)}
    />
  );
}

function LimitsForm(p: {
  data: UserLimitsData;
  saving: boolean;
  saved: boolean;
  error: unknown;
  onSave(overrides: UserLimitsOverride): void;
}) {
  // A field holds the admin's override; empty means "the deployment's default".
  const [fields, setFields] = useState<Record<LimitName, string>>(() => {
    const initial = {} as Record<LimitName, string>;
    for (const { name } of LIMITS) initial[name] = String(p.data.overrides[name] ?? "");
    return initial;
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const overrides: UserLimitsOverride = {};
    for (const { name } of LIMITS) {
      const value = fields[name].trim();
      if (value !== "") overrides[name] = Number(value);
    }
    p.onSave(overrides);
  };
  return (
    <form
      className="card stack limits-form"
      onSubmit={submit}
      aria-label={`Limits of ${p.data.uid}`}
    >
      <h3>
        <code>{p.data.uid}</code>
      </h3>
      <table className="file-table" data-testid="limits-table">
        <thead>
          <tr>
            <th scope="col">Limit</th>
            <th scope="col">In force</th>
            <th scope="col">Override</th>
          </tr>
        </thead>
        <tbody>
          {LIMITS.map(({ name, label, show }) => {
            const overridden = p.data.overrides[name] !== undefined;
            return (
              <tr key={name} data-limit={name}>
                <td>
                  <Label.Root htmlFor={`limit-${name}`}>{label}</Label.Root>
                </td>
                <td>
                  {show(p.data.limits[name])}{" "}
                  <span className={`badge${overridden ? " badge-running" : ""}`}>
                    {overridden ? "set by admin" : "default"}
                  </span>
                </td>
                <td>
                  <input
                    id={`limit-${name}`}
                    type="number"
                    min={name === "workspace_bytes" || name === "workspace_inodes" ? 0 : 1}
                    step={1}
                    inputMode="numeric"
                    placeholder="default"
                    value={fields[name]}
                    onChange={(e) => setFields({ ...fields, [name]: e.target.value })}
                  />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <p className="muted">An empty override takes the deployment's default.</p>
      <div className="row">
        <button type="submit" className="primary" disabled={p.saving}>
          {p.saving ? "Saving…" : "Save limits"}
        </button>
        <button
          type="button"
          disabled={p.saving}
          onClick={() => {
            const cleared = {} as Record<LimitName, string>;
            for (const { name } of LIMITS) cleared[name] = "";
            setFields(cleared);
          }}
        >
          Clear overrides
        </button>
        {p.saved && <span role="status">Saved.</span>}
      </div>
      <ErrorMessage error={p.error} />
    </form>
  );
}
