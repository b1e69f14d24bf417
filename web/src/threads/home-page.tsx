import { useConsole } from "../console-context.tsx";

export function HomePage() {
  const { session } = useConsole();
  return (
    <section className="empty">
      <h2>Welcome, {session.uid}</h2>
      <p>
        Start a <strong>New thread</strong> to talk to an agent working in its own directory of your
        workspace, or open one on the left.
      </p>
    </section>
  );
}
