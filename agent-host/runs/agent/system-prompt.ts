import type { FileView } from "../../../shared/paths/file-view.ts";
import {
  runtimeWorkdirPath,
  SANDBOX_SKILLS_MOUNT,
  SANDBOX_USER_DATA_MOUNT,
} from "../../../shared/paths/index.ts";

export interface SystemPromptInput {
  /** The run's Workdir, relative to the UserWorkspace (e.g. projects/<uuid>). */
  readonly workdirPath: string;
  /** What the sandbox may write (docs/architecture.md §5); `workspace` when absent. */
  readonly fileView?: FileView;
  /** Slugs of the skills projected into the sandbox, when the worker knows them. */
  readonly skills?: readonly string[];
  /** True for a sub-agent run: its answer goes to the agent that spawned it. */
  readonly subagent?: boolean;
  /** Operator or deployment text appended at the end. */
  readonly extra?: string;
}

/**
 * The system prompt: where the agent works and the default write rule (docs/architecture.md §3).
 *
 * NOT A SECURITY BOUNDARY. "Write only inside the Workdir unless the user asks" is an
 * instruction to the model, which a model may ignore and a prompt injection may override.
 * What actually holds: the sandbox mounts only the caller's own UserWorkspace (rw) and
 * skill projection (ro), the file tools refuse anything outside the UserWorkspace and any
 * write to the skills, and the file layer never follows a symlink. Writing elsewhere in
 * the user's own workspace is allowed by all of those on purpose: a Workdir is a cwd and a
 * default view, not an isolation boundary between the threads of one user, unless the run
 * asked for the `workdir` file view, which the mounts and the file tools do enforce.
 */
export function buildSystemPrompt(input: SystemPromptInput): string {
  const workdir = runtimeWorkdirPath(input.workdirPath);
  const lines = [
    input.subagent
      ? "You are a sub-agent of Workcell: another agent gave you a task. Do it and end with a final answer that reports the result; that answer is all the other agent sees."
      : "You are the Workcell agent: you help the user by working with files and commands in a Linux sandbox.",
    "",
    "Where you work:",
    `- Your Workdir is ${workdir}. It is the current directory of every command, and relative paths in the file tools start there.`,
    ...(input.fileView === "workdir"
      ? [
          `- ${SANDBOX_USER_DATA_MOUNT} is the user's whole workspace, read-only in this conversation: you can read the user's other projects there, but only your Workdir is writable (file view "workdir"). Writing anywhere else fails with "Read-only file system", in commands and in write_file alike.`,
          `- Put files you produce for the user in ${workdir}/outputs/ (create it when you first need it); files the user attached are in ${workdir}/uploads/.`,
        ]
      : [
          `- ${SANDBOX_USER_DATA_MOUNT} is the user's whole workspace; other projects of the user live there too.`,
          `- Do not create, change or delete anything outside your Workdir unless the user asks you to. Put files you produce for the user in ${workdir}/outputs/ (create it when you first need it); files the user attached are in ${workdir}/uploads/.`,
        ]),
    `- Skills are read-only under ${SANDBOX_SKILLS_MOUNT}: each is a directory with a SKILL.md describing when and how to use it. Read the SKILL.md (with bash, e.g. cat) before using a skill.`,
    "- /tmp and the rest of the home directory are private to this sandbox and are not kept after the conversation.",
  ];
  if (input.skills !== undefined) {
    lines.push(
      input.skills.length === 0
        ? "- No skills are available in this conversation."
        : `- Available skills: ${input.skills.map((slug) => `${SANDBOX_SKILLS_MOUNT}/${slug}`).join(", ")}.`,
    );
  }
  lines.push(
    "",
    "How to work:",
    "- Use the tools to look before you act; do not guess file contents.",
    "- Prefer write_file for creating files; it never replaces an existing file unless you pass overwrite: true.",
    "- A tool error explains what was refused and why: adjust and continue.",
    "- When you are done, answer with a short summary of what you did and where the results are.",
  );
  if (input.extra !== undefined && input.extra.trim() !== "") lines.push("", input.extra.trim());
  return lines.join("\n");
}
