/**
 * What a service capability can allow (docs/decisions/0011-skills-over-the-data-plane.md).
 * A service capability is minted by functions/ for its own server-to-server calls to an
 * agent-host's data plane, for operations that are not about one Workdir. It never opens a
 * Workdir, and the workdir ops (CAPABILITY_OPS) are never among its ops.
 *
 * * `skills.refresh`: make one user's skill projection equal their grants now.
 * * `skills.personal`: list one user's personal skills (`agents/skills/` of their
 *   UserWorkspace), read-only.
 * * `skills.import`: import one uploaded archive as one shared skill.
 * * `workspace.usage`: read one user's UserWorkspace usage (bytes, inodes) as the data
 *   plane's quota accounting sees it (docs/decisions/0049); nothing else of the workspace.
 */
export const SERVICE_CAPABILITY_OPS = [
  "skills.refresh",
  "skills.personal",
  "skills.import",
  "workspace.usage",
] as const;

export type ServiceCapabilityOp = (typeof SERVICE_CAPABILITY_OPS)[number];

/**
 * Ops that act for one user: a capability granting any of them names that user in its `uid`
 * claim, and the data plane refuses a request about anyone else. The import is not per user
 * (a shared skill belongs to the catalogue), so it is scoped to one slug and one upload.
 */
export const PER_USER_SERVICE_OPS: readonly ServiceCapabilityOp[] = [
  "skills.refresh",
  "skills.personal",
  "workspace.usage",
];

/** Ops scoped to one skill import: the capability names the slug and the upload key. */
export const SKILL_IMPORT_SERVICE_OPS: readonly ServiceCapabilityOp[] = ["skills.import"];

/** True when `granted` allows `op`. No service op implies another one. */
export function grantsServiceOp(
  granted: readonly ServiceCapabilityOp[],
  op: ServiceCapabilityOp,
): boolean {
  return granted.includes(op);
}
