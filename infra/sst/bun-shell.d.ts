// Stands in for the "bun" module (tsconfig `paths`): SST's platform/src/config.ts imports
// the type `Shell` from it for its `autodeploy` workflow hooks, which this app does not use.
// The real @types/bun (pulled in by the platform's dependencies) would replace Node's global
// URL and fetch types for every file in this check.
export type Shell = (strings: TemplateStringsArray, ...values: unknown[]) => unknown;
