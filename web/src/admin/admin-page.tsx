import type { ReactNode } from "react";
import { NavLink } from "react-router";
import { useConsole } from "../console-context.tsx";

/** The operator pages, with one tab row between them; non-admins get a plain refusal. */
export function AdminPage({ title, children }: { title: string; children: ReactNode }) {
  const { session } = useConsole();
  if (!session.admin) return <p className="empty">This page is for administrators.</p>;
  return (
    <section className="page">
      <nav aria-label="Administration" className="tabs admin-tabs">
        <NavLink to="/admin/skills">Skills</NavLink>
        <NavLink to="/admin/nodes">Nodes</NavLink>
        <NavLink to="/admin/runtime">Runtime</NavLink>
        <NavLink to="/admin/limits">Limits</NavLink>
      </nav>
      <h2>{title}</h2>
      {children}
    </section>
  );
}
