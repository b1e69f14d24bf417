import { WorkcellError } from "../errors/workcell-error.ts";
import { canonicalUuid } from "./canonical-uuid.ts";
import { hasControlCharacter, utf8ByteLength } from "./text-checks.ts";
import {
  MANAGED_WORKDIR_ROOT,
  MAX_PATH_COMPONENT_BYTES,
  MAX_WORKDIR_PATH_BYTES,
} from "./workdir-path-limits.ts";

/** Stable identifiers of the rules, sent as `details.rule` so clients and tests can tell them apart. */
export type WorkdirPathRule =
  | "empty"
  | "too_long"
  | "nul"
  | "control_character"
  | "ill_formed_unicode"
  | "backslash"
  | "url"
  | "absolute"
  | "empty_component"
  | "dot_component"
  | "component_too_long"
  | "managed_shape";

/**
 * Validates a Workdir path (docs/architecture.md §2) and returns its canonical form.
 *
 * This is a syntactic gate, not the containment check: agent-host still opens every
 * component fd-relative with no-follow semantics. What the gate guarantees is that a
 * path resolved lexically against the UserWorkspace root stays strictly below it: no
 * absolute paths, no `.`/`..`, no empty components (so no `//`, no trailing `/`), and
 * nothing another layer could reinterpret (`\` on Windows tooling, `://` as a URL,
 * NUL as a C string terminator).
 *
 * Paths under `projects/` are reserved for managed Workdirs and must be exactly
 * `projects/<uuid>`; the uuid is canonicalised to lowercase hyphenated form so one
 * directory has one name. Bare `projects` is refused too: it is the parent of every
 * managed Workdir, not a Workdir.
 */
export function normalizeWorkdirPath(raw: string): string {
  const path = raw.trim();
  if (path.length === 0) fail("empty", "must not be empty");
  // Cheap bound before any per-character work: UTF-8 never has fewer bytes than UTF-16 units.
  if (path.length > MAX_WORKDIR_PATH_BYTES) fail("too_long", tooLongMessage());
  if (path.includes("\u0000")) fail("nul", "must not contain a NUL character");
  if (hasControlCharacter(path)) fail("control_character", "must not contain control characters");
  if (!path.isWellFormed())
    fail("ill_formed_unicode", "must be well-formed Unicode (no lone surrogates)");
  if (path.includes("\\")) fail("backslash", "must use '/' as separator and contain no '\\'");
  if (path.includes("://")) fail("url", "must be a workspace path, not a URL (no '://')");
  if (path.startsWith("/"))
    fail("absolute", "must be relative to your workspace: remove the leading '/'");
  if (utf8ByteLength(path) > MAX_WORKDIR_PATH_BYTES) fail("too_long", tooLongMessage());

  const components = path.split("/");
  for (const component of components) {
    if (component.length === 0) {
      fail("empty_component", "must not contain empty components (no '//' and no trailing '/')");
    }
    if (component === "." || component === "..") {
      fail("dot_component", "must not contain '.' or '..' components");
    }
    if (utf8ByteLength(component) > MAX_PATH_COMPONENT_BYTES) {
      fail(
        "component_too_long",
        `must not contain a component longer than ${MAX_PATH_COMPONENT_BYTES} bytes`,
      );
    }
  }

  if (components[0] !== MANAGED_WORKDIR_ROOT) return path;
  const uuid = components.length === 2 ? canonicalUuid(components[1] ?? "") : undefined;
  if (uuid === undefined) {
    fail(
      "managed_shape",
      `under '${MANAGED_WORKDIR_ROOT}/' must be exactly '${MANAGED_WORKDIR_ROOT}/<uuid>': omit workdir_path to get a managed Workdir, or use a path outside '${MANAGED_WORKDIR_ROOT}/'`,
    );
  }
  return `${MANAGED_WORKDIR_ROOT}/${uuid}`;
}

function tooLongMessage(): string {
  return `must not be longer than ${MAX_WORKDIR_PATH_BYTES} bytes`;
}

function fail(rule: WorkdirPathRule, requirement: string): never {
  throw new WorkcellError("invalid_request", `workdir_path ${requirement}.`, {
    details: { field: "workdir_path", rule },
  });
}
