/**
 * What a data-plane capability can allow. The first three are the browser-facing ones of
 * `POST /v1/threads/{id}/files/access` (FILE_ACCESS_OPS); the others are only ever minted
 * by functions/ for its own server-to-server calls:
 *
 * * `read`: list a Workdir directory, download a file (`GET /dp/v1/files…`).
 * * `write`: upload a file, a batch, create a directory (never overwrites).
 * * `delete`: remove an entry of the Workdir (never the Workdir itself).
 * * `check`: ask whether the Workdir exists as a real directory (linked projects),
 *   without being able to read anything in it. `read` implies `check`.
 * * `materialize`: create a managed Workdir (and the UserWorkspace) if missing.
 * * `import`: copy attachment objects from S3 into the Workdir (the confirm flow).
 * * `checkpoint`: take, restore or fork from a checkpoint of the Workdir
 *   (docs/architecture.md §16); the thread was authorised by functions/.
 */
export const CAPABILITY_OPS = [
  "read",
  "write",
  "delete",
  "check",
  "materialize",
  "import",
  "checkpoint",
] as const;

export type CapabilityOp = (typeof CAPABILITY_OPS)[number];

/**
 * Ops that imply another one. Kept as data so the rule is visible in one place: a holder of
 * `read` can see the Workdir's root listing anyway, so a separate existence check tells it
 * nothing new.
 */
const IMPLIED_BY: Readonly<Partial<Record<CapabilityOp, readonly CapabilityOp[]>>> = {
  check: ["read"],
};

/** True when `granted` allows `op`, directly or through an op that implies it. */
export function grantsOp(granted: readonly CapabilityOp[], op: CapabilityOp): boolean {
  if (granted.includes(op)) return true;
  return (IMPLIED_BY[op] ?? []).some((implying) => granted.includes(implying));
}
