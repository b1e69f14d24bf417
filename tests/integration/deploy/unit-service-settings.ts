import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * The [Service] assignments of a unit file and its drop-ins, in the order systemd reads
 * them (the unit first, then each drop-in): key → every value assigned, an empty
 * assignment kept as "" because for list settings it resets what came before.
 */
export function unitServiceSettings(texts: string[]): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  for (const text of texts) {
    let section = "";
    // A trailing backslash continues the line (systemd.syntax(7)).
    for (const line of text.replace(/\\\n/g, " ").split("\n")) {
      const trimmed = line.trim();
      if (trimmed === "" || trimmed.startsWith("#") || trimmed.startsWith(";")) continue;
      const header = /^\[(.+)\]$/.exec(trimmed);
      if (header) {
        section = header[1] ?? "";
        continue;
      }
      if (section !== "Service") continue;
      const eq = trimmed.indexOf("=");
      if (eq < 0) continue;
      const key = trimmed.slice(0, eq).trim();
      settings.set(key, [...(settings.get(key) ?? []), trimmed.slice(eq + 1).trim()]);
    }
  }
  return settings;
}

/** CapabilityBoundingSet= as systemd merges it: lines add up, an empty one resets. */
export function boundingSet(values: string[] | undefined): Set<string> | "all" {
  if (values === undefined) return "all";
  let caps = new Set<string>();
  for (const value of values) {
    if (value === "") caps = new Set();
    else if (value.startsWith("~")) throw new Error("inverted bounding sets are not handled");
    else for (const cap of value.split(/\s+/)) caps.add(cap);
  }
  return caps;
}

/**
 * The system calls SystemCallFilter= lets through, with its @groups resolved by
 * `systemd-analyze syscall-filter` (this machine's systemd): the first line after the
 * last reset decides allow-list or deny-list; later lines add to or take from it.
 * "all" with a deny set when no allow-list was given.
 */
export async function syscallFilter(
  values: string[] | undefined,
): Promise<{ allowed: Set<string> | "all"; denied: Set<string> }> {
  const lines = values ?? [];
  const start = lines.lastIndexOf("");
  const effective = lines.slice(start + 1);
  let allowed: Set<string> | "all" = "all";
  const denied = new Set<string>();
  for (const [index, line] of effective.entries()) {
    const deny = line.startsWith("~");
    const names = await resolve(line.replace(/^~/, "").split(/\s+/));
    if (index === 0 && !deny) allowed = new Set(names);
    else if (deny) {
      for (const name of names) {
        denied.add(name);
        if (allowed !== "all") allowed.delete(name);
      }
    } else if (allowed !== "all") for (const name of names) allowed.add(name);
    else for (const name of names) denied.delete(name);
  }
  return { allowed, denied };
}

async function resolve(entries: string[]): Promise<string[]> {
  const names: string[] = [];
  for (const entry of entries) {
    if (!entry.startsWith("@")) {
      names.push(entry.replace(/:.*$/, ""));
      continue;
    }
    const { stdout } = await run("systemd-analyze", ["syscall-filter", entry], {
      timeout: 30_000,
    });
    for (const line of stdout.split("\n").slice(1)) {
      const name = line.trim();
      if (name === "" || name.startsWith("#")) continue;
      // A group may name another group; resolve it too.
      if (name.startsWith("@")) names.push(...(await resolve([name])));
      else names.push(name);
    }
  }
  return names;
}
