import { DEFAULT_FILE_VIEW, type FileView } from "../../../shared/paths/file-view.ts";
import {
  SANDBOX_HOME,
  SANDBOX_SKILLS_MOUNT,
  SANDBOX_USER_DATA_MOUNT,
} from "../../../shared/paths/index.ts";
import type { ToolResult } from "./tool.ts";
import { refusalResult } from "./tool-failure.ts";

export type PathAccess = "read" | "write";

export type RuntimePathResolution =
  | {
      readonly ok: true;
      /** Relative to the UserWorkspace, for WorkspaceFs; "" is the UserWorkspace itself. */
      readonly workspacePath: string;
      /** The normalised sandbox path, for messages to the model. */
      readonly runtimePath: string;
    }
  | { readonly ok: false; readonly refusal: ToolResult };

/**
 * Maps a path as the model writes it (the sandbox's view: absolute under
 * /home/gem/user-data, or relative to the Workdir, which is the sandbox's cwd) to a path
 * in the UserWorkspace, or a refusal the model can act on.
 *
 * `.` and `..` are resolved lexically here, like `realpath -m` minus symlinks. That is
 * safe because the file layer refuses a symlink anywhere in a path: with no symlink in
 * play, the lexical and the physical parent are the same directory. Containment does not
 * rest on this function: the workspace layer resolves fd-relative with no-follow from the
 * UserWorkspace root, so even a wrong mapping here cannot leave it.
 */
export function resolveRuntimePath(
  input: string,
  workdirPath: string,
  access: PathAccess,
  fileView: FileView = DEFAULT_FILE_VIEW,
): RuntimePathResolution {
  if (input.includes("\u0000")) {
    return refuse("invalid_request", "invalid_path", "The path contains a NUL character.", input);
  }
  const expanded = input === "~" || input.startsWith("~/") ? SANDBOX_HOME + input.slice(1) : input;
  const base = expanded.startsWith("/") ? [] : [SANDBOX_USER_DATA_MOUNT, workdirPath];
  const absolute = normalize([...base, expanded].join("/"));

  const mount = SANDBOX_USER_DATA_MOUNT;
  if (absolute === mount || absolute.startsWith(`${mount}/`)) {
    const workspacePath = absolute.slice(mount.length + 1);
    // The `workdir` view (docs/architecture.md §5): the host-side tools obey the sandbox's
    // mounts, where only the Workdir is writable.
    const inWorkdir = workspacePath === workdirPath || workspacePath.startsWith(`${workdirPath}/`);
    if (access === "write" && fileView === "workdir" && !inWorkdir) {
      return refuse(
        "forbidden",
        "outside_workdir_view",
        `${absolute} is outside your Workdir, and this run may only write inside it (file view "workdir"; the rest of ${mount} is read-only): write under ${mount}/${workdirPath} instead.`,
        input,
      );
    }
    return { ok: true, workspacePath, runtimePath: absolute };
  }
  if (absolute === SANDBOX_SKILLS_MOUNT || absolute.startsWith(`${SANDBOX_SKILLS_MOUNT}/`)) {
    return access === "write"
      ? refuse(
          "forbidden",
          "skills_read_only",
          `${absolute} is in the read-only skills mount: write your files under the Workdir instead.`,
          input,
        )
      : refuse(
          "forbidden",
          "skills_not_in_file_tools",
          `The file tools only reach ${mount}; read skills with bash, e.g. cat ${absolute}.`,
          input,
        );
  }
  return refuse(
    "forbidden",
    "path_outside_user_data",
    `${absolute} is outside ${mount}: the file tools only reach your workspace (paths relative to the Workdir, or absolute under ${mount}).`,
    input,
  );
}

/** Joins on `/`, drops empty and `.` components, applies `..` (never above `/`). */
function normalize(path: string): string {
  const out: string[] = [];
  for (const name of path.split("/")) {
    if (name === "" || name === ".") continue;
    if (name === "..") out.pop();
    else out.push(name);
  }
  return `/${out.join("/")}`;
}

function refuse(
  code: string,
  reason: string,
  message: string,
  input: string,
): RuntimePathResolution {
  return { ok: false, refusal: refusalResult(code, reason, message, { path: input }) };
}
