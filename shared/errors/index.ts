export * from "./domain-errors.ts";
export * from "./error-catalogue.ts";
export * from "./queue-disposition.ts";
export * from "./to-error-body.ts";
export * from "./workcell-error.ts";
