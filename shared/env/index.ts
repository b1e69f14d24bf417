export * from "./agent-host-env.ts";
export * from "./env-error.ts";
export * from "./env-vars.ts";
export * from "./functions-env.ts";
export * from "./local-env.ts";
export * from "./metrics-env.ts";
export * from "./parse-env.ts";
