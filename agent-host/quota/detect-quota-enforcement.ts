import { readFile, realpath } from "node:fs/promises";
import { abortable } from "../../shared/async/abortable.ts";

/** What this node enforces UserWorkspace quotas with, as it reports it (decision 0047). */
export type QuotaEnforcementReport = {
  readonly mode: "project_quota" | "accounting";
  /** What detection found: the data root's mount, its filesystem and quota options. */
  readonly detail: string;
};

/** A mount as /proc/self/mountinfo lists it (proc(5)). */
export type MountInfoEntry = {
  readonly mountPoint: string;
  readonly fsType: string;
  readonly source: string;
  /** The per-mount and the superblock options together. */
  readonly options: readonly string[];
};

/** mountinfo escapes space, tab, newline and backslash as octal (`\040`). */
const unescapeOctal = (field: string): string =>
  field.replace(/\\([0-7]{3})/g, (_, octal: string) =>
    String.fromCharCode(Number.parseInt(octal, 8)),
  );

export function parseMountInfo(text: string): MountInfoEntry[] {
  const entries: MountInfoEntry[] = [];
  for (const line of text.split("\n")) {
    const fields = line.split(" ");
    const dash = fields.indexOf("-");
    if (dash < 6 || fields.length < dash + 4) continue;
    entries.push({
      mountPoint: unescapeOctal(fields[4] ?? ""),
      fsType: fields[dash + 1] ?? "",
      source: unescapeOctal(fields[dash + 2] ?? ""),
      options: [...(fields[5] ?? "").split(","), ...(fields[dash + 3] ?? "").split(",")],
    });
  }
  return entries;
}

/** The mount holding `path` (already resolved): the last listed of the longest prefixes. */
export function mountOf(
  entries: readonly MountInfoEntry[],
  path: string,
): MountInfoEntry | undefined {
  let best: MountInfoEntry | undefined;
  for (const entry of entries) {
    const mp = entry.mountPoint;
    const contains = mp === "/" || path === mp || path.startsWith(`${mp}/`);
    if (contains && (best === undefined || mp.length >= best.mountPoint.length)) best = entry;
  }
  return best;
}

/** ext4 lists `prjquota`; XFS lists `prjquota` or `pquota` (enforced) / `pqnoenforce`. */
const PROJECT_QUOTA_OPTIONS = new Set(["prjquota", "pquota", "prjjquota"]);

/**
 * Decides the enforcement from the data root's real mount. Project quotas count only when
 * the filesystem is mounted with enforced project quotas AND this kernel has quota support
 * (`/proc/sys/fs/quota` exists only with CONFIG_QUOTA). Even then this agent-host does not
 * yet assign a project id per UserWorkspace, so it reports what is active — `accounting` —
 * and says in `detail` that project quotas would be available (decision 0047): reporting
 * `project_quota` while nothing sets project ids would claim a stop that does not exist.
 */
export function decideQuotaEnforcement(
  mount: MountInfoEntry | undefined,
  kernelQuota: boolean,
  dataRoot: string,
): QuotaEnforcementReport {
  if (mount === undefined) {
    return { mode: "accounting", detail: `no mount found for the data root ${dataRoot}` };
  }
  const where = `data root ${dataRoot} on ${mount.fsType} (${mount.source} at ${mount.mountPoint})`;
  const projectOption = mount.options.find((o) => PROJECT_QUOTA_OPTIONS.has(o));
  if (!kernelQuota) {
    return {
      mode: "accounting",
      detail: `${where}: this kernel has no quota support (no /proc/sys/fs/quota, CONFIG_QUOTA off), so no filesystem can enforce project quotas`,
    };
  }
  if (projectOption === undefined) {
    return {
      mode: "accounting",
      detail: `${where}: not mounted with project quotas (prjquota)`,
    };
  }
  return {
    mode: "accounting",
    detail: `${where}: mounted with ${projectOption}, but this agent-host does not assign project ids to UserWorkspaces yet`,
  };
}

const pathExists = async (path: string, signal: AbortSignal): Promise<boolean> =>
  abortable(readFile(path, { signal }), signal, "quota detection").then(
    () => true,
    () => false,
  );

/** Reads the real mount table and kernel for `dataRoot` (detail says what it found). */
export async function detectQuotaEnforcement(
  dataRoot: string,
  signal: AbortSignal,
): Promise<QuotaEnforcementReport> {
  const resolved = await realpath(dataRoot);
  const table = await readFile("/proc/self/mountinfo", { encoding: "utf8", signal });
  // /proc/sys/fs/quota is a directory; a file inside it proves the kernel's quota code.
  const kernelQuota = await pathExists("/proc/sys/fs/quota/lookups", signal);
  return decideQuotaEnforcement(mountOf(parseMountInfo(table), resolved), kernelQuota, resolved);
}
