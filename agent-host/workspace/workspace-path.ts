import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import { hasControlCharacter, utf8ByteLength } from "../../shared/paths/index.ts";
import type { WorkspaceLimits } from "./workspace-limits.ts";

/** Stable rule ids, sent as `details.rule`. */
export type WorkspacePathRule =
  | "empty"
  | "nul"
  | "backslash"
  | "url"
  | "absolute"
  | "dot_dot"
  | "dot"
  | "empty_component"
  | "slash"
  | "control_character"
  | "ill_formed_unicode"
  | "name_too_long"
  | "path_too_long";

export type NameLimits = Pick<WorkspaceLimits, "maxNameBytes">;
type PathLimits = Pick<WorkspaceLimits, "maxNameBytes" | "maxPathBytes">;

/**
 * Splits a path relative to the directory a WorkspaceFs is bound to into validated names;
 * `""` is that directory itself. This is a syntactic gate in front of the resolvers (which
 * are the real containment: fd-relative, no-follow): anything that could mean "elsewhere"
 * (`..`, an absolute path, `\`, `://`, NUL) is forbidden (403), anything merely malformed
 * (empty or `.` components, control characters, over-long names) is invalid (400).
 */
export function splitWorkspacePath(path: string, limits: PathLimits, field = "path"): string[] {
  if (path === "") return [];
  if (path.includes("\u0000")) forbidden(field, "nul");
  if (path.includes("\\")) forbidden(field, "backslash");
  if (path.includes("://")) forbidden(field, "url");
  if (path.startsWith("/")) forbidden(field, "absolute");
  if (path.length > limits.maxPathBytes || utf8ByteLength(path) > limits.maxPathBytes) {
    invalid(field, "path_too_long", `must not be longer than ${limits.maxPathBytes} bytes`);
  }
  const names = path.split("/");
  // `..` anywhere is an escape attempt even where a later check would also catch it.
  if (names.includes("..")) forbidden(field, "dot_dot");
  for (const name of names) checkName(name, limits, field);
  return names;
}

/**
 * Validates one entry name (a batch file name, a listing entry): any violation, `..` and
 * `/` included, is a bad name (400), since a name is not a path and cannot point elsewhere.
 */
export function validateEntryName(name: string, limits: NameLimits, field = "name"): string {
  if (name === "..") invalid(field, "dot_dot", "must not be '..'");
  if (name.includes("/")) invalid(field, "slash", "must be a single name without '/'");
  if (name.includes("\\")) invalid(field, "backslash", "must not contain '\\'");
  checkName(name, limits, field);
  return name;
}

/** True when `name` can be addressed through this layer (listings hide the others). */
export function isAddressableName(name: string, limits: NameLimits): boolean {
  try {
    validateEntryName(name, limits);
    return true;
  } catch {
    return false;
  }
}

function checkName(name: string, limits: NameLimits, field: string): void {
  if (name.length === 0) {
    invalid(
      field,
      "empty_component",
      "must not contain empty components (no '//', no trailing '/')",
    );
  }
  if (name === ".") invalid(field, "dot", "must not contain '.' components");
  if (name.includes("\u0000")) invalid(field, "nul", "must not contain NUL");
  if (hasControlCharacter(name)) {
    invalid(field, "control_character", "must not contain control characters");
  }
  if (!name.isWellFormed()) {
    invalid(field, "ill_formed_unicode", "must be well-formed Unicode");
  }
  if (utf8ByteLength(name) > limits.maxNameBytes) {
    invalid(
      field,
      "name_too_long",
      `must not contain a name longer than ${limits.maxNameBytes} bytes`,
    );
  }
}

function forbidden(field: string, rule: WorkspacePathRule): never {
  throw domainError("path_outside_workdir", { details: { field, rule } });
}

function invalid(field: string, rule: WorkspacePathRule, requirement: string): never {
  throw new WorkcellError("invalid_request", `${field} ${requirement}.`, {
    details: { field, rule },
  });
}
