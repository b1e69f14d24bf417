import { createHash } from "node:crypto";
import { WorkcellError } from "../errors/workcell-error.ts";
import { MAX_PATH_COMPONENT_BYTES } from "./workdir-path-limits.ts";

const PLAIN_UID = /^[A-Za-z0-9_-]+$/;

/** Prefix of every hashed dirname; no plain dirname may start with it. */
export const HASHED_UID_PREFIX = "uid-";

/**
 * The directory name of a uid's UserWorkspace and skill projection (docs/architecture.md §2).
 *
 * A uid made only of `[A-Za-z0-9_-]` is used as is, so operators can find a user on
 * disk; anything else (OIDC subjects like `oidc:tenant/user`, which contain `/` or `:`)
 * becomes `uid-` + sha256(uid) hex, which cannot contain a separator or be `..`.
 *
 * The mapping must be injective, or two users would share a workspace. Plain names
 * never start with `uid-` (otherwise the uid `uid-<64 hex>` would equal the hashed
 * name of the uid whose digest it spells), so a uid starting with `uid-` is hashed
 * too. The prefix test ignores case so that a case-insensitive filesystem (macOS local
 * development) cannot fold `UID-…` onto a hashed name either. A plain uid longer than
 * a path component allows is hashed as well; it starts with no `uid-`, so it cannot
 * collide with a plain one.
 */
export function uidDirname(uid: string): string {
  if (uid.length === 0) {
    throw new WorkcellError(
      "invalid_request",
      "The uid must not be empty: the token needs a 'sub' claim.",
      {
        details: { field: "uid" },
      },
    );
  }
  const plain =
    PLAIN_UID.test(uid) &&
    !uid.toLowerCase().startsWith(HASHED_UID_PREFIX) &&
    uid.length <= MAX_PATH_COMPONENT_BYTES;
  if (plain) return uid;
  return HASHED_UID_PREFIX + createHash("sha256").update(uid, "utf8").digest("hex");
}
