// The drizzle schema (also drizzle-kit's input, see drizzle.config.ts). One file per
// entity under schema/; after changing any of them run `npm run db:generate`.
export * from "./schema/agent-runs.ts";
export * from "./schema/approvals.ts";
export * from "./schema/attachments.ts";
export * from "./schema/change-batches.ts";
export * from "./schema/checkpoints.ts";
export * from "./schema/conversations.ts";
export * from "./schema/execution-leases.ts";
export * from "./schema/idempotency-keys.ts";
export * from "./schema/messages.ts";
export * from "./schema/network.ts";
export * from "./schema/nodes.ts";
export * from "./schema/personal-access-tokens.ts";
export * from "./schema/projects.ts";
export * from "./schema/rate-limits.ts";
export * from "./schema/requests.ts";
export * from "./schema/run-changes.ts";
export * from "./schema/run-events.ts";
export * from "./schema/sandboxes.ts";
export * from "./schema/secrets.ts";
export * from "./schema/skills.ts";
export * from "./schema/tmp-uploads.ts";
export * from "./schema/user-limits.ts";
