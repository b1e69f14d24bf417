import { ConsoleApiError } from "../api/console-api.ts";

/** A server error as the user should see it: its message, and its code for reports. */
export function ErrorMessage({ error, title }: { error: unknown; title?: string }) {
  if (error === null || error === undefined) return null;
  const code = error instanceof ConsoleApiError ? error.code : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div className="error" role="alert">
      {title !== undefined && <strong>{title}: </strong>}
      <span className="error-message">{message}</span>
      {code !== undefined && <code className="error-code">{code}</code>}
    </div>
  );
}

export function isNotFound(error: unknown): boolean {
  return error instanceof ConsoleApiError && error.code === "not_found";
}
