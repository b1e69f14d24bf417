import { NavLink, Outlet, useLocation } from "react-router";
import { useConsole } from "./console-context.tsx";
import { ThreadList } from "./threads/thread-list.tsx";

export function Layout() {
  const { session } = useConsole();
  const { pathname } = useLocation();
  // "Admin" stays highlighted on every operator page (they have their own tab row).
  const adminActive = () => (pathname.startsWith("/admin/") ? "active" : "");
  return (
    <div className="layout">
      <header className="topbar">
        <NavLink to="/" className="brand">
          Workcell
        </NavLink>
        <nav aria-label="Main" className="topnav">
          <NavLink to="/" end>
            Threads
          </NavLink>
          <NavLink to="/skills">Skills</NavLink>
          <NavLink to="/usage">Usage</NavLink>
          <NavLink to="/tokens">Tokens</NavLink>
          <NavLink to="/secrets">Secrets</NavLink>
          {session.admin && (
            <NavLink to="/admin/skills" className={adminActive}>
              Admin
            </NavLink>
          )}
        </nav>
        <span className="whoami" data-testid="whoami">
          {session.uid}
          {session.admin ? " (admin)" : ""}
        </span>
        <button type="button" onClick={() => void session.signOut()}>
          Sign out
        </button>
      </header>
      <aside className="sidebar" aria-label="Threads">
        <ThreadList />
      </aside>
      <main className="content">
        <Outlet />
      </main>
    </div>
  );
}
