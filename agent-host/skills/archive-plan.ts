import { assertNever } from "../../shared/assert-never.ts";
import { hasControlCharacter } from "../../shared/paths/text-checks.ts";
import { ArchiveRejection } from "./archive-rejection.ts";
import type { SkillLimits } from "./skill-limits.ts";

/** What an archive entry says it is, before any of it is trusted. */
export type ArchiveEntryKind =
  | "file"
  | "dir"
  | "symlink"
  | "hardlink"
  | "device"
  | "fifo"
  | "other";

export interface ArchiveEntryMeta {
  /** The name exactly as the archive spells it. */
  readonly name: string;
  readonly kind: ArchiveEntryKind;
  /** Declared uncompressed size (0 for directories). */
  readonly size: number;
  /** Unix permission bits when the archive carries them, else 0. */
  readonly mode: number;
}

/** An accepted entry: a validated relative path and one of the two kinds a skill may hold. */
export interface PlannedEntry {
  readonly components: readonly string[];
  readonly kind: "file" | "dir";
  readonly exec: boolean;
  readonly size: number;
  readonly name: string;
}

export type ArchivePlanLimits = Pick<
  SkillLimits,
  "maxEntries" | "maxSkillBytes" | "maxFileBytes" | "maxDepth" | "maxPathBytes" | "maxNameBytes"
>;

export const SKILL_MANIFEST = "SKILL.md";

const WINDOWS_DRIVE = /^[A-Za-z]:/;

/**
 * Validates one archive name and splits it. Refused: absolute names (`/x`, `C:x`), any
 * `..` or `.` component (except one leading `./`, which `tar -C dir .` writes), empty
 * components (`a//b`), backslashes (a Windows separator that would be a plain character
 * here), control characters, and names over the length and depth limits. Returns null
 * for the archive's own root (`./`).
 */
export function splitArchiveName(
  name: string,
  limits: ArchivePlanLimits,
): { components: string[]; trailingSlash: boolean } | null {
  const unsafe = (why: string) =>
    new ArchiveRejection("unsafe_name", `The archive entry '${printable(name)}' ${why}.`, name);
  if (name.length === 0) throw unsafe("has an empty name");
  if (hasControlCharacter(name)) throw unsafe("contains control characters");
  if (name.includes("\\")) throw unsafe("contains a backslash");
  if (name.startsWith("/") || WINDOWS_DRIVE.test(name)) throw unsafe("is an absolute path");
  let rest = name.startsWith("./") ? name.slice(2) : name;
  if (rest === "" || rest === ".") return null;
  const trailingSlash = rest.endsWith("/");
  if (trailingSlash) rest = rest.slice(0, -1);
  if (Buffer.byteLength(rest) > limits.maxPathBytes) throw unsafe("is too long");
  const components = rest.split("/");
  for (const component of components) {
    if (component === "" || component === ".") throw unsafe("has an empty or '.' component");
    if (component === "..") throw unsafe("leaves the archive root ('..')");
    if (Buffer.byteLength(component) > limits.maxNameBytes)
      throw unsafe("has a name that is too long");
  }
  if (components.length > limits.maxDepth) throw unsafe("is nested too deep");
  return { components, trailingSlash };
}

export interface ArchivePlan {
  /** Validates the next entry; null for the archive's root entry, which is skipped. */
  add(meta: ArchiveEntryMeta): PlannedEntry | null;
  /** Where the skill starts: `[]` (SKILL.md at the top) or `[dir]` (one top directory holding it). */
  skillRoot(): readonly string[];
}

/**
 * The set of entries seen so far, and every rule that spans entries: only regular files
 * and directories; no name twice (a second entry would silently replace the first one's
 * bytes or type); no file where a directory is needed; entry count and total size.
 */
export function createArchivePlan(limits: ArchivePlanLimits): ArchivePlan {
  const kinds = new Map<string, "file" | "dir">();
  const explicit = new Set<string>();
  let entries = 0;
  let declaredBytes = 0;

  function claimDirectory(path: string, name: string): void {
    const existing = kinds.get(path);
    if (existing === "file") {
      throw new ArchiveRejection(
        "duplicate_entry",
        `The archive uses '${printable(path)}' both as a file and as a directory.`,
        name,
      );
    }
    kinds.set(path, "dir");
  }

  return {
    add(meta) {
      const split = splitArchiveName(meta.name, limits);
      if (split === null) {
        if (meta.kind !== "dir") {
          throw new ArchiveRejection(
            "unsafe_name",
            "The archive root is not a directory.",
            meta.name,
          );
        }
        return null;
      }
      refuseKind(meta);
      const kind = meta.kind === "dir" || split.trailingSlash ? "dir" : "file";
      if (kind !== meta.kind) {
        throw new ArchiveRejection(
          "malformed",
          `The archive entry '${printable(meta.name)}' ends with '/' but is not a directory.`,
          meta.name,
        );
      }
      entries++;
      if (entries > limits.maxEntries) {
        throw new ArchiveRejection(
          "too_many_entries",
          `The archive has more than ${limits.maxEntries} entries.`,
          meta.name,
        );
      }
      const path = split.components.join("/");
      if (explicit.has(path)) {
        throw new ArchiveRejection(
          "duplicate_entry",
          `The archive holds '${printable(path)}' more than once.`,
          meta.name,
        );
      }
      explicit.add(path);
      for (let i = 1; i < split.components.length; i++) {
        claimDirectory(split.components.slice(0, i).join("/"), meta.name);
      }
      if (kind === "dir") {
        claimDirectory(path, meta.name);
      } else {
        if (kinds.has(path)) {
          throw new ArchiveRejection(
            "duplicate_entry",
            `The archive uses '${printable(path)}' both as a file and as a directory.`,
            meta.name,
          );
        }
        kinds.set(path, "file");
        if (meta.size > limits.maxFileBytes) {
          throw new ArchiveRejection(
            "too_large",
            `The archive entry '${printable(path)}' is larger than ${limits.maxFileBytes} bytes.`,
            meta.name,
          );
        }
        declaredBytes += meta.size;
        if (declaredBytes > limits.maxSkillBytes) {
          throw new ArchiveRejection(
            "too_large",
            `The archive expands to more than ${limits.maxSkillBytes} bytes.`,
            meta.name,
          );
        }
      }
      return {
        components: split.components,
        kind,
        exec: kind === "file" && (meta.mode & 0o111) !== 0,
        size: kind === "file" ? meta.size : 0,
        name: meta.name,
      };
    },

    skillRoot(): readonly string[] {
      if (kinds.get(SKILL_MANIFEST) === "file") return [];
      const tops = new Set([...kinds.keys()].map((path) => path.split("/")[0] as string));
      const [top] = tops;
      if (
        tops.size === 1 &&
        top !== undefined &&
        kinds.get(`${top}/${SKILL_MANIFEST}`) === "file"
      ) {
        return [top];
      }
      throw new ArchiveRejection(
        "missing_skill_md",
        `The archive has no ${SKILL_MANIFEST} at its top (or in its single top directory): a skill is a directory with a ${SKILL_MANIFEST}.`,
      );
    },
  };
}

function refuseKind(meta: ArchiveEntryMeta): void {
  switch (meta.kind) {
    case "file":
    case "dir":
      return;
    case "symlink":
    case "hardlink":
      throw new ArchiveRejection(
        "link_entry",
        `The archive entry '${printable(meta.name)}' is a ${meta.kind === "symlink" ? "symbolic" : "hard"} link: skills hold only regular files and directories.`,
        meta.name,
      );
    case "device":
    case "fifo":
    case "other":
      throw new ArchiveRejection(
        "special_entry",
        `The archive entry '${printable(meta.name)}' is a ${meta.kind === "other" ? "special entry" : meta.kind}: skills hold only regular files and directories.`,
        meta.name,
      );
    default:
      assertNever(meta.kind, "archive entry kind");
  }
}

/** A name for a message: control characters escaped, bounded. */
export function printable(name: string): string {
  const escaped = JSON.stringify(name).slice(1, -1);
  return escaped.length > 200 ? `${escaped.slice(0, 200)}…` : escaped;
}
