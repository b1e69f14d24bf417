export * from "./canonical-uuid.ts";
export * from "./file-view.ts";
export * from "./managed-workdir-path.ts";
export * from "./normalize-workdir-path.ts";
export * from "./runtime-paths.ts";
export * from "./text-checks.ts";
export * from "./uid-dirname.ts";
export * from "./workdir-path-limits.ts";
