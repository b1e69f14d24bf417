import type { Logger } from "pino";
import { SKILL_SLUG_PATTERN } from "../../shared/contracts/skill.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import type { UserWorkspaces } from "../workspace/user-workspaces.ts";
import type { WorkspaceFs } from "../workspace/workspace-fs.ts";
import { SKILL_MANIFEST } from "./archive-plan.ts";
import { DEFAULT_SKILL_LIMITS, type SkillLimits } from "./skill-limits.ts";
import { parseSkillManifest } from "./skill-manifest.ts";

/** Where personal skills live inside a UserWorkspace (docs/architecture.md §6). */
export const PERSONAL_SKILLS_PATH = "agents/skills";

export interface PersonalSkill {
  readonly slug: string;
  readonly description: string;
}

export interface PersonalSkillsDeps {
  readonly workspaces: UserWorkspaces;
  readonly logger: Logger;
  readonly limits?: Partial<SkillLimits>;
}

export interface PersonalSkills {
  list(uid: string, signal: AbortSignal): Promise<PersonalSkill[]>;
}

/**
 * Lists a user's personal skills: the directories `agents/skills/<slug>/` of their
 * UserWorkspace that hold a regular `SKILL.md`. They are never projected: the agent sees
 * them through the user-data mount, where the user manages them.
 *
 * Everything goes through the workspace layer, so the user's own tree is read with its
 * rules: no symlink is followed (a symlinked `agents/` or skill directory is simply not
 * listed), special files are never opened, reads are bounded. Names that are not valid
 * slugs of the API contract are skipped rather than reported with a name the API cannot
 * carry. A missing workspace or folder is an empty list.
 */
export function createPersonalSkills(deps: PersonalSkillsDeps): PersonalSkills {
  const limits: SkillLimits = { ...DEFAULT_SKILL_LIMITS, ...deps.limits };
  return {
    async list(uid, signal) {
      let workspace: WorkspaceFs;
      try {
        workspace = await deps.workspaces.openUserWorkspace(uid, { signal });
      } catch (err) {
        if (isUserDataRefusal(err)) return [];
        throw err;
      }
      try {
        let listing: Awaited<ReturnType<typeof workspace.list>>;
        try {
          listing = await workspace.list(PERSONAL_SKILLS_PATH, {
            maxEntries: limits.maxPersonalSkills,
            signal,
          });
        } catch (err) {
          if (isUserDataRefusal(err)) return [];
          throw err;
        }
        const found: PersonalSkill[] = [];
        for (const item of listing.items) {
          if (item.type !== "dir" || !SKILL_SLUG_PATTERN.test(item.name)) continue;
          signal.throwIfAborted();
          try {
            const bytes = await readPrefix(
              workspace,
              `${PERSONAL_SKILLS_PATH}/${item.name}/${SKILL_MANIFEST}`,
              limits.maxManifestBytes,
              signal,
            );
            const manifest = parseSkillManifest(bytes.toString("utf8"), limits.maxDescriptionChars);
            found.push({ slug: item.name, description: manifest.description });
          } catch (err) {
            if (!isUserDataRefusal(err)) throw err;
            // No SKILL.md, a symlink, a FIFO, or a manifest over the read limit: not listed.
            deps.logger.debug({ uid, slug: item.name, err }, "personal skill skipped");
          }
        }
        return found;
      } finally {
        workspace.close();
      }
    },
  };
}

/** The first `maxBytes` of a regular file: a long SKILL.md still yields its front matter. */
async function readPrefix(
  workspace: WorkspaceFs,
  path: string,
  maxBytes: number,
  signal: AbortSignal,
): Promise<Buffer> {
  const reader = await workspace.openRead(path, { signal });
  if (reader.info.size === 0) {
    reader.close();
    return Buffer.alloc(0);
  }
  const end = Math.min(reader.info.size, maxBytes) - 1;
  const chunks: Uint8Array[] = [];
  for await (const chunk of reader.stream({ range: { start: 0, end }, signal })) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** What the user's own data can cause: anything but an outage or a bug of ours. */
function isUserDataRefusal(err: unknown): boolean {
  return (
    err instanceof WorkcellError &&
    (err.code === "not_found" ||
      err.code === "forbidden" ||
      err.code === "invalid_request" ||
      err.code === "payload_too_large")
  );
}
