import pino from "pino";
import { createApp } from "../../functions/app.ts";
import type { AppDeps } from "../../functions/app-deps.ts";

/** AppDeps fields with a default (`deps.x ?? ...`): unset, so the default is taken. */
const OPTIONAL_SETTINGS = [
  "limits",
  "corsOrigins",
  "eventTickets",
  "runChanges",
  "skillsLimits",
  "tracing",
  "userLimitDefaults",
  "nodeTtlMs",
  "metrics",
  "exportMetrics",
  "rateLimiter",
  "flushTraces",
  "personalTokenKey",
];

/**
 * The control plane's OpenAPI document, as `GET /openapi.json` serves it, without any
 * infrastructure: the routes are registered by `createApp`, and none of them runs here,
 * so every dependency is inert (touching one throws and names it).
 */
export async function apiOpenApiDocument(): Promise<unknown> {
  const inert = (name: string): unknown =>
    new Proxy(() => {}, {
      get: (_target, key) => (key === "then" ? undefined : inert(`${name}.${String(key)}`)),
      apply: () => {
        throw new Error(`${name} is not available while exporting the OpenAPI document`);
      },
    });
  const known: Partial<AppDeps> = { logger: pino({ level: "silent" }) };
  const deps = new Proxy(known, {
    get: (target, key: string) =>
      key in target
        ? target[key as keyof AppDeps]
        : // Optional settings read at construction stay unset.
          OPTIONAL_SETTINGS.includes(key)
          ? undefined
          : inert(key),
  }) as AppDeps;
  // As the local Workcell serves it (its default address): `servers` names that origin.
  const res = await createApp(deps).request("http://127.0.0.1:8080/openapi.json");
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  return res.json();
}
