import { useQuery } from "@tanstack/react-query";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";

export function SkillsPage() {
  const { api } = useConsole();
  const skills = useQuery({
    queryKey: ["skills"],
    queryFn: ({ signal }) => api.skills.list(signal),
  });
  return (
    <section className="page">
      <h2>Your skills</h2>
      <p className="muted">
        Skills appear read-only in your sandboxes at <code>/home/gem/skills</code>; personal skills
        live in your workspace under <code>agents/skills/</code>.
      </p>
      {skills.isPending && <p className="muted">Loading skills…</p>}
      <ErrorMessage error={skills.error} />
      {skills.data?.length === 0 && (
        <p className="empty">No skills yet. An administrator can grant you some.</p>
      )}
      <ul className="skill-list" data-testid="skill-list">
        {skills.data?.map((s) => (
          <li key={`${s.kind}:${s.slug}`}>
            <strong>{s.slug}</strong> <span className="badge">{s.kind}</span>
            {s.description !== "" && <div className="muted">{s.description}</div>}
          </li>
        ))}
      </ul>
    </section>
  );
}
