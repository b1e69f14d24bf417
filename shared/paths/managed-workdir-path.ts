import { randomUUID } from "node:crypto";
import { WorkcellError } from "../errors/workcell-error.ts";
import { canonicalUuid, isCanonicalUuid } from "./canonical-uuid.ts";
import { MANAGED_WORKDIR_ROOT } from "./workdir-path-limits.ts";

const MANAGED_PREFIX = `${MANAGED_WORKDIR_ROOT}/`;

/** `projects/<uuid>` for a given uuid in any form `canonicalUuid` accepts. */
export function managedWorkdirPath(uuid: string): string {
  const canonical = canonicalUuid(uuid.trim());
  if (canonical === undefined) {
    throw new WorkcellError(
      "invalid_request",
      "A managed Workdir needs a UUID: pass a valid UUID.",
      {
        details: { field: "uuid" },
      },
    );
  }
  return MANAGED_PREFIX + canonical;
}

/** A fresh managed Workdir path, `projects/<lowercase uuid v4>`. */
export function newManagedWorkdirPath(): string {
  // randomUUID is a lowercase v4 on Node and on Workers (nodejs_compat).
  return MANAGED_PREFIX + randomUUID();
}

/** True only for the canonical managed form; run `normalizeWorkdirPath` first on user input. */
export function isManagedWorkdirPath(path: string): boolean {
  return path.startsWith(MANAGED_PREFIX) && isCanonicalUuid(path.slice(MANAGED_PREFIX.length));
}
