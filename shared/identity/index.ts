export * from "./sandbox-id.ts";
