export * from "./capability-claims.ts";
export * from "./capability-keys.ts";
export * from "./capability-limits.ts";
export * from "./capability-ops.ts";
export * from "./mint-capability.ts";
export * from "./verify-capability.ts";
