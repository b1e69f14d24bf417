/**
 * The web console's Content-Security-Policy (docs/decisions/0103-console-csp.md). Workdir
 * files are the agent's output, so everything the console previews is attacker-written:
 * no image, font or frame from another origin may load by itself (a remote image is a
 * beacon carrying whatever its URL holds), and only the console's own bundled scripts run.
 * `connect-src` stays open to http(s): only that bundled code connects, and it talks to
 * the API, the data plane, S3 and the OIDC issuer, whose origins the static build does
 * not know. Styles may be inline: Radix injects <style> elements; CSS cannot run code.
 */
const DIRECTIVES = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "font-src 'self'",
  // PDFs preview from a blob: URL (Chromium checks its viewer against object-src too);
  // OIDC silent renew frames the issuer.
  "frame-src blob: https:",
  "object-src blob:",
  "connect-src 'self' http: https:",
  "base-uri 'none'",
  "form-action 'self'",
] as const;

/** As a response header: the policy plus `frame-ancestors 'none'` (no page may frame it). */
export const CONSOLE_CSP_HEADER = [...DIRECTIVES, "frame-ancestors 'none'"].join("; ");

/**
 * As the built index.html's <meta http-equiv>, for hosts that cannot set headers (the
 * static site): browsers ignore `frame-ancestors` there, so it is left out.
 */
export const CONSOLE_CSP_META = DIRECTIVES.join("; ");

/** The headers every console response carries. */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": CONSOLE_CSP_HEADER,
  "X-Content-Type-Options": "nosniff",
};
