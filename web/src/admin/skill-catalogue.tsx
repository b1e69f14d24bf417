import { useQuery } from "@tanstack/react-query";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";

/** Every builtin and shared skill with its content hash and how many users hold it. */
export function SkillCatalogue() {
  const { api } = useConsole();
  const catalogue = useQuery({
    queryKey: ["admin-catalogue"],
    queryFn: ({ signal }) => api.admin.catalogue(signal),
  });
  return (
    <section className="card" aria-labelledby="catalogue-title">
      <h3 id="catalogue-title">Catalogue</h3>
      {catalogue.isPending && <p className="muted">Loading the catalogue…</p>}
      <ErrorMessage error={catalogue.error} />
      {catalogue.data?.length === 0 && <p className="muted">No skills installed.</p>}
      <table className="file-table" data-testid="skill-catalogue">
        <thead>
          <tr>
            <th scope="col">Skill</th>
            <th scope="col">Kind</th>
            <th scope="col">Grants</th>
            <th scope="col" className="hide-narrow">
              Version
            </th>
          </tr>
        </thead>
        <tbody>
          {catalogue.data?.map((s) => (
            <tr key={s.slug}>
              <td>
                <strong>{s.slug}</strong>
                {s.description !== "" && <div className="muted">{s.description}</div>}
              </td>
              <td>{s.kind}</td>
              <td data-testid={`grants-${s.slug}`}>{s.grant_count}</td>
              <td className="hide-narrow">
                <code>{s.content_hash.slice(0, 12)}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
