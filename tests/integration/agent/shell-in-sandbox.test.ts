import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentEvent,
  createAgentTools,
  createShellModelClient,
  runAgentLoop,
  type ToolEnvironment,
} from "../../../agent-host/runs/agent/index.ts";
import { createSandboxExec } from "../../../agent-host/runs/execute/sandbox-exec-adapter.ts";
import type { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import type { SandboxHandle } from "../../../agent-host/sandbox/sandbox-handle.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type WorkspaceFs,
} from "../../../agent-host/workspace/index.ts";
import { testLogger } from "../../support/test-logger.ts";
import { type ManagerWorld, managerWorld } from "../sandbox/manager-fixture.ts";
import { materializeWorkdir } from "../sandbox/sandbox-fixture.ts";

const logger = testLogger();
const UID = "shell-user";
const WORKDIR = "work";

// The local Workcell without an LLM: the shell model runs the user's message as one bash
// call in a real sandbox (Docker, the offline busybox image), through the real loop and
// tools. The SandboxExec is the run worker's own adapter (createSandboxExec) over a real
// SandboxManager on a fresh database, fenced by the acquired generation like a run's.
describe("shell model in a real sandbox", () => {
  let world: ManagerWorld;
  let manager: SandboxManager;
  let handle: SandboxHandle;
  let workspace: WorkspaceFs;
  let workspaceDir: string;

  beforeAll(async () => {
    world = await managerWorld({ killGraceMs: 1_000 });
    manager = world.manager();
    workspaceDir = await materializeWorkdir(world.dataRoot.path, UID, WORKDIR);
    const acquired = await manager.acquire(
      { uid: UID, runtimeScopeId: randomUUID(), workdirPath: WORKDIR },
      AbortSignal.timeout(60_000),
    );
    if (!acquired.ok) throw new Error(`acquire refused: ${JSON.stringify(acquired)}`);
    handle = acquired.handle;
    const sys = createLibcSyscalls();
    const users = createUserWorkspaces({
      dataRoot: world.dataRoot.path,
      sys,
      resolver: createPathResolver(sys),
    });
    workspace = await users.openUserWorkspace(UID);
  }, 120_000);

  afterAll(async () => {
    workspace?.close();
    await world?.cleanup();
  });

  function toolEnv(): ToolEnvironment {
    return { sandbox: createSandboxExec(manager, handle), workspace, workdirPath: WORKDIR };
  }

  async function run(
    input: string,
    signal = new AbortController().signal,
    bashTimeoutMs?: number,
    onEvent: (event: AgentEvent) => void = () => {},
  ) {
    const events: AgentEvent[] = [];
    const result = await runAgentLoop({
      model: createShellModelClient(),
      tools: createAgentTools({
        subagents: false,
        ...(bashTimeoutMs === undefined ? {} : { bash: { defaultTimeoutMs: bashTimeoutMs } }),
      }),
      toolEnv: toolEnv(),
      systemPrompt: "",
      messages: [{ role: "user", content: input }],
      signal,
      logger,
      emit: (event) => {
        events.push(event);
        onEvent(event);
      },
    });
    return { result, events };
  }

  it("runs the message in the Workdir and replies with its output", async () => {
    const { result, events } = await run(
      "mkdir -p outputs && echo hello > outputs/hello.txt && cat outputs/hello.txt && pwd && id -u",
    );
    expect(result).toMatchObject({
      status: "succeeded",
      finalText: "hello\n/home/gem/user-data/work\n1000\n",
      turns: 2,
    });
    // The production adapter streams the command's output live (`tool.output`, as many
    // chunks as the output arrived in) between its start and its completion.
    const types = events.map((e) => e.type);
    expect(types).toContain("tool.output");
    expect(types.filter((type) => type !== "tool.output")).toEqual([
      "run.status",
      "tool.started",
      "tool.completed",
      "message.delta",
      "message.completed",
    ]);
    expect(events[1]).toMatchObject({
      data: { name: "bash", input: { command: expect.stringContaining("echo hello") } },
    });
    // The file is in the UserWorkspace on the host, where the data plane will find it.
    expect(readFileSync(join(workspaceDir, WORKDIR, "outputs", "hello.txt"), "utf8")).toBe(
      "hello\n",
    );
  });

  it("a failing command still answers, with stderr and the exit code", async () => {
    const { result, events } = await run("echo out; echo oops >&2; exit 3");
    expect(result.status).toBe("succeeded");
    expect(result.finalText).toBe("out\n[stderr]\noops\n[exit code 3]");
    expect(events.find((e) => e.type === "tool.completed")).toMatchObject({
      data: { is_error: true, exit_code: 3, output: { exit_code: 3, status: "exited" } },
    });
  });

  it("the skills mount is read-only from inside", async () => {
    const { result } = await run("touch /home/gem/skills/x");
    expect(result.finalText).toMatch(/Read-only file system[\s\S]*\[exit code 1\]/);
  });

  it("cancelling kills the command and ends the run cancelled", async () => {
    const controller = new AbortController();
    // Far longer than the test's timeout: the run can only end in time if the abort
    // kills the command (no wall-clock assertion needed). The abort comes once the
    // command's first output arrived, so the sleep is running by then.
    const { result } = await run("echo sleeping; sleep 3000", controller.signal, undefined, (e) => {
      if (e.type === "tool.output") controller.abort();
    });
    expect(result.status).toBe("cancelled");
    expect(result.error).toBeUndefined();
    // The sandbox's own keep-alive is `sleep 2147483647`; ours must be gone.
    const { result: ps } = await run("ps -o args | grep -c '^sleep 3000' || true");
    expect(ps.finalText.trim()).toBe("0");
  });

  it("a command killed by its timeout fails the run with command_timeout, never succeeded", async () => {
    const { result, events } = await run("echo started; sleep 30", undefined, 1_000);
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("command_timeout");
    expect(events.find((e) => e.type === "tool.completed")).toMatchObject({
      data: { is_error: true, exit_code: null, output: { status: "timed_out" } },
    });
    // The output still reached the user, and the ending says why it failed (finishRun
    // writes it as the run's `run.completed`).
    expect(result.finalText).toContain("started");
    const { result: ps } = await run("ps -o args | grep -c '^sleep 30' || true");
    expect(ps.finalText.trim()).toBe("0");
  });
});
