import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type AgentEvent,
  createAgentTools,
  createScriptedModelClient,
  runAgentLoop,
  type SandboxExec,
  type ScriptedToolCall,
} from "../../../agent-host/runs/agent/index.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type WorkspaceFs,
} from "../../../agent-host/workspace/index.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { testLogger } from "../../support/test-logger.ts";
import { snapshot } from "../workspace/harness.ts";

const logger = testLogger();
const UID = "alice";
const WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
const SECRET = "TOP SECRET: never read or changed through the agent's tools\n";
const RUNTIME_WORKDIR = `/home/gem/user-data/${WORKDIR}`;

// The file tools run as the model would drive them: a scripted model issues the calls
// through the real loop, the tools work on a real UserWorkspace through the safe layer.
// Each escape test asserts the refusal the model gets, that the run goes on, and that
// nothing outside the UserWorkspace changed (outside/ is a sibling of workspace/).

const noSandbox: SandboxExec = {
  exec: () => Promise.reject(new Error("the file tools must not use the sandbox")),
};

let root: DataRoot;
let workspace: WorkspaceFs;
let workspaceDir: string;
let workdirDir: string;
let outside: string;
let outsideBefore: Record<string, string>;

beforeEach(async () => {
  root = await freshDataRoot();
  const sys = createLibcSyscalls();
  const users = createUserWorkspaces({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
  });
  (await users.ensureManagedWorkdir(UID, WORKDIR)).close();
  workspace = await users.openUserWorkspace(UID);
  workspaceDir = join(root.path, "users", UID, "workspace");
  workdirDir = join(workspaceDir, WORKDIR);
  outside = join(root.path, "users", UID, "outside");
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), SECRET);
  outsideBefore = snapshot(outside);
});

afterEach(async () => {
  try {
    expect(snapshot(outside)).toEqual(outsideBefore);
  } finally {
    workspace.close();
    await root.remove();
  }
});

/** Runs the calls in one model turn, then a final answer; returns each call's result. */
async function callTools(...calls: ScriptedToolCall[]) {
  const model = createScriptedModelClient([{ toolCalls: calls }, { text: "done" }]);
  const events: AgentEvent[] = [];
  const result = await runAgentLoop({
    model,
    tools: createAgentTools({ subagents: false }),
    toolEnv: { sandbox: noSandbox, workspace, workdirPath: WORKDIR },
    systemPrompt: "",
    messages: [{ role: "user", content: "go" }],
    signal: new AbortController().signal,
    logger,
    emit: (event) => void events.push(event),
  });
  // A refusal never ends the run: the model gets it and answers.
  expect(result.status).toBe("succeeded");
  const completed = events.flatMap((e) => (e.type === "tool.completed" ? [e.data] : []));
  const fedBack = (model.requests[1]?.messages ?? []).filter((m) => m.role === "tool");
  return completed.map((data, n) => ({
    isError: data.is_error,
    output: data.output as Record<string, unknown>,
    content: fedBack[n]?.content ?? "",
  }));
}

const write = (path: string, content: string, overwrite?: boolean): ScriptedToolCall => ({
  name: "write_file",
  arguments: { path, content, ...(overwrite === undefined ? {} : { overwrite }) },
});
const read = (path: string): ScriptedToolCall => ({ name: "read_file", arguments: { path } });
const list = (path?: string): ScriptedToolCall => ({
  name: "list_dir",
  arguments: path === undefined ? {} : { path },
});

describe("file tools on a real UserWorkspace", () => {
  it("write, read and list inside the Workdir; outputs/ is created on first use", async () => {
    const [written, readBack, absolute, listed] = await callTools(
      write("outputs/report.md", "# Report\nall good\n"),
      read("outputs/report.md"),
      read(`${RUNTIME_WORKDIR}/outputs/report.md`),
      list(),
    );
    expect(written).toMatchObject({
      isError: false,
      content: `Wrote 18 bytes to ${RUNTIME_WORKDIR}/outputs/report.md.`,
    });
    expect(readBack?.content).toBe("# Report\nall good\n");
    expect(absolute?.content).toBe("# Report\nall good\n");
    expect(listed?.content).toBe(`${RUNTIME_WORKDIR}:\noutputs/`);
    const file = join(workdirDir, "outputs", "report.md");
    expect(readFileSync(file, "utf8")).toBe("# Report\nall good\n");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(workdirDir, "outputs")).mode & 0o777).toBe(0o700);
  });

  it("write is no-clobber unless overwrite is true", async () => {
    writeFileSync(join(workdirDir, "notes.txt"), "original\n");
    const [refused, replaced] = await callTools(
      write("notes.txt", "clobbered\n"),
      write("./notes.txt", "replaced\n", true),
    );
    expect(refused?.isError).toBe(true);
    expect(refused?.content).toContain("Error (conflict: name_exists)");
    expect(refused?.content).toContain("pass overwrite: true");
    expect(replaced?.isError).toBe(false);
    expect(readFileSync(join(workdirDir, "notes.txt"), "utf8")).toBe("replaced\n");
  });

  it("an existing file stays byte-for-byte unchanged after a refused write", async () => {
    writeFileSync(join(workdirDir, "keep.txt"), "keep me\n");
    const before = snapshot(workdirDir);
    const [refused] = await callTools(write("keep.txt", ""));
    expect(refused?.isError).toBe(true);
    expect(snapshot(workdirDir)).toEqual(before);
  });

  it("may write elsewhere in the user's own workspace (a Workdir is not a boundary)", async () => {
    const [result] = await callTools(write("../shared-notes.txt", "hi\n"));
    expect(result?.isError).toBe(false);
    expect(readFileSync(join(workspaceDir, "projects", "shared-notes.txt"), "utf8")).toBe("hi\n");
  });

  describe("escapes are refused, reported to the model, and change nothing", () => {
    it("`../` past the user-data root", async () => {
      const escapes = ["../../../outside/secret.txt", "../../../../../../etc/passwd"];
      const results = await callTools(
        ...escapes.map((path) => write(path, "pwned\n", true)),
        read("../../../outside/secret.txt"),
        list("../../.."),
      );
      for (const result of results) {
        expect(result.isError).toBe(true);
        expect(result.content).toContain("Error (forbidden: path_outside_user_data)");
      }
      expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe(SECRET);
    });

    it("/etc/passwd, read or written", async () => {
      const passwd = readFileSync("/etc/passwd");
      const results = await callTools(
        read("/etc/passwd"),
        write("/etc/passwd", "root::0:0::/:/bin/sh\n", true),
      );
      for (const result of results) {
        expect(result.isError).toBe(true);
        expect(result.content).toContain("/etc/passwd is outside /home/gem/user-data");
      }
      expect(readFileSync("/etc/passwd")).toEqual(passwd);
    });

    it("a write to /home/gem/skills", async () => {
      const [result] = await callTools(write("/home/gem/skills/x", "evil\n"));
      expect(result?.isError).toBe(true);
      expect(result?.content).toContain("Error (forbidden: skills_read_only)");
      expect(result?.output).toMatchObject({ error_code: "forbidden", reason: "skills_read_only" });
    });

    it("a symlinked directory on the way", async () => {
      symlinkSync(outside, join(workdirDir, "link"));
      const results = await callTools(
        write("link/new.txt", "pwned\n"),
        read("link/secret.txt"),
        list("link"),
      );
      for (const result of results) {
        expect(result.isError).toBe(true);
        expect(result.content).toContain("Error (forbidden: symlink_refused)");
      }
    });

    it("a symlink as the file itself: never followed, even with overwrite", async () => {
      symlinkSync(join(outside, "secret.txt"), join(workdirDir, "evil.txt"));
      const [readResult, noClobber, listed] = await callTools(
        read("evil.txt"),
        write("evil.txt", "pwned\n"),
        list(),
      );
      expect(readResult?.content).toContain("symlink_refused");
      expect(noClobber?.content).toContain("name_exists");
      // Listings hide symlinks.
      expect(listed?.content).toBe(`${RUNTIME_WORKDIR}:\n(empty directory)`);
      const [overwritten] = await callTools(write("evil.txt", "replaced\n", true));
      // Replaced as a link, never written through: the target outside is untouched.
      expect(overwritten?.isError).toBe(false);
      expect(readFileSync(join(workdirDir, "evil.txt"), "utf8")).toBe("replaced\n");
    });

    it("a FIFO is refused without blocking", async () => {
      execFileSync("mkfifo", [join(workdirDir, "pipe")]);
      const [result] = await callTools(read("pipe"));
      expect(result?.content).toContain("special_file_refused");
    });
  });

  it("reads only the first bytes of a large file, and spots binary files", async () => {
    writeFileSync(join(workdirDir, "big.txt"), "x".repeat(300 * 1024));
    writeFileSync(join(workdirDir, "blob.bin"), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2]));
    const [big, blob, missing] = await callTools(
      read("big.txt"),
      read("blob.bin"),
      read("nope.txt"),
    );
    expect(big?.output).toMatchObject({ size: 300 * 1024, shown_bytes: 48 * 1024 });
    // Booleans, so a failure does not print 300 KiB of x.
    expect(big?.content.length).toBeLessThan(50 * 1024);
    expect(big?.content.includes("[file is 307200 bytes; showed the first 49152.")).toBe(true);
    expect(blob?.content).toContain("is a binary file (7 bytes)");
    expect(missing?.isError).toBe(true);
    expect(missing?.content).toContain("Error (not_found");
    expect(missing?.content).toContain(`${RUNTIME_WORKDIR}/nope.txt`);
  });
});
