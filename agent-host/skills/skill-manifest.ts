import { readSync } from "node:fs";
import {
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_NOFOLLOW,
  O_NONBLOCK,
  O_RDONLY,
} from "../workspace/syscalls.ts";
import { SKILL_MANIFEST } from "./archive-plan.ts";
import { fstatFd, skillFsError } from "./skill-fs.ts";

export interface SkillManifest {
  readonly name: string | undefined;
  readonly description: string;
}

/**
 * Reads `name` and `description` from SKILL.md's front matter (the `---` block at its
 * top, `key: value` lines, quoted or not, `>` / `|` blocks folded into one line). Only
 * these two keys are read and nothing is evaluated, so no YAML parser (and none of its
 * tags or anchors) is involved. Without front matter the description is empty.
 */
export function parseSkillManifest(text: string, maxDescriptionChars: number): SkillManifest {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines[0]?.trim() !== "---") return { name: undefined, description: "" };
  const fields = new Map<string, string>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.trim() === "---") break;
    const match = /^([A-Za-z_][A-Za-z0-9_-]*):\s*(.*)$/.exec(line);
    if (match === null) continue;
    const key = match[1] as string;
    let value = (match[2] as string).trim();
    if (value === ">" || value === "|" || value === ">-" || value === "|-" || value === "") {
      const block: string[] = [];
      while (i + 1 < lines.length && /^\s+\S/.test(lines[i + 1] as string)) {
        block.push((lines[++i] as string).trim());
      }
      value = block.join(" ");
    }
    fields.set(key, unquote(value));
  }
  const description = collapse(fields.get("description") ?? "");
  return {
    name: fields.get("name"),
    description:
      description.length > maxDescriptionChars
        ? `${description.slice(0, maxDescriptionChars - 1)}…`
        : description,
  };
}

function unquote(value: string): string {
  if (value.length >= 2) {
    const first = value[0];
    if ((first === '"' || first === "'") && value.endsWith(first)) {
      const inner = value.slice(1, -1);
      return first === "'" ? inner.replaceAll("''", "'") : inner.replaceAll('\\"', '"');
    }
  }
  return value;
}

function collapse(value: string): string {
  // Control characters would end up in JSON responses and logs: fold them into spaces.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return value.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
}

/**
 * The manifest of a skill directory held open by agent-host: SKILL.md opened no-follow and
 * non-blocking, accepted only as a regular file, at most `maxBytes` read.
 */
export function readSkillManifestAt(
  sys: FsSyscalls,
  skillDirFd: number,
  maxBytes: number,
  maxDescriptionChars: number,
): SkillManifest | undefined {
  const opened = sys.openat(
    skillDirFd,
    SKILL_MANIFEST,
    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
  );
  if (!opened.ok) {
    if (opened.errno === Errno.ENOENT || opened.errno === Errno.ELOOP) return undefined;
    throw skillFsError("open", SKILL_MANIFEST, opened.errno);
  }
  try {
    if (!fstatFd(sys, opened.value, SKILL_MANIFEST).isFile()) return undefined;
    const buffer = Buffer.alloc(maxBytes);
    let filled = 0;
    while (filled < maxBytes) {
      const n = readSync(opened.value, buffer, filled, maxBytes - filled, filled);
      if (n === 0) break;
      filled += n;
    }
    return parseSkillManifest(buffer.subarray(0, filled).toString("utf8"), maxDescriptionChars);
  } finally {
    sys.close(opened.value);
  }
}
