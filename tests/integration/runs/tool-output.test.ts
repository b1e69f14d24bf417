import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { RunWorkerDeps } from "../../../agent-host/runs/index.ts";
import type { SandboxTier } from "../../../agent-host/sandbox/sandbox-tier.ts";
import { SANDBOX_RUNTIME_MOUNT } from "../../../shared/paths/runtime-paths.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { type SseFrame, sseFrames } from "../functions/support/sse.ts";
import { TIERS } from "../sandbox/manager-fixture.ts";
import { runApi } from "./run-api.ts";
import { expectGapFree, type RunWorld, runWorld, UID } from "./run-harness.ts";

// Live command output (issue #15, docs/api.md "Runs"): `tool.output` events appended while a
// command runs, read over the real SSE route of the control plane, in both sandbox tiers.

let world: RunWorld | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

/** The process tier has only the Runtime Assets (busybox here): its shell, not /bin/sh. */
function shellOf(tier: SandboxTier): Partial<RunWorkerDeps> {
  return tier === "process"
    ? { shell: () => ({ ok: true, argv: [`${SANDBOX_RUNTIME_MOUNT}/usr/bin/sh`, "-c"] }) }
    : {};
}

type Event = { seq: number; type: string; data: Record<string, unknown> };
const eventOf = (frame: SseFrame): Event => JSON.parse(frame.data ?? "{}") as Event;

async function start(tier: SandboxTier, agentLimits?: RunWorkerDeps["agentLimits"]) {
  world = await runWorld({}, tier);
  await world.worker({
    extra: { ...shellOf(tier), ...(agentLimits === undefined ? {} : { agentLimits }) },
  });
  const project = await world.project();
  const thread = await world.thread(project);
  const api = await runApi(world);
  const workdir = join(
    world.dataRoot.path,
    "users",
    uidDirname(UID),
    "workspace",
    project.workdirPath,
  );
  return { w: world, thread, api, workdir };
}

async function openStream(api: Awaited<ReturnType<typeof runApi>>, runId: string) {
  const res = await api.call("GET", `/v1/runs/${runId}/events`, UID);
  expect(res.status).toBe(200);
  if (res.body === null) throw new Error("no event stream body");
  return sseFrames(res.body);
}

/** The `text` of a tool.completed event's output (the bounded summary). */
const resultText = (event: Event | undefined) =>
  String((event?.data.output as { text?: unknown } | undefined)?.text ?? "");

const outputText = (events: Event[], stream = "stdout") =>
  events
    .filter((e) => e.type === "tool.output" && e.data.stream === stream && !e.data.truncated)
    .map((e) => e.data.text)
    .join("");

describe.each(TIERS)("%s tier", (tier) => {
  it("streams each line of a running command over SSE before the command can go on", async () => {
    const { w, thread, api, workdir } = await start(tier);
    // The command waits for a gate file after each line, and the test writes the gate
    // only once it has read that line from the event stream: each line must have been
    // delivered while the command was still running, or the run could never finish.
    const wait = (gate: string) => `while [ ! -e ${gate} ]; do sleep 0.05; done`;
    const runId = await w.submit(
      thread,
      `echo one; ${wait("gate-1")}; echo two >&2; ${wait("gate-2")}; echo three`,
    );
    const frames = await openStream(api, runId);
    const seen: Event[] = [];
    const readUntil = async (done: (e: Event) => boolean) => {
      for (;;) {
        const next = await frames.next();
        if (next.done) throw new Error(`stream ended early: ${JSON.stringify(seen)}`);
        if (next.value.event === undefined) continue;
        const event = eventOf(next.value);
        seen.push(event);
        if (done(event)) return;
      }
    };
    const printed = (stream: string, text: string) => (e: Event) =>
      e.type === "tool.output" && e.data.stream === stream && String(e.data.text).includes(text);

    await readUntil(printed("stdout", "one"));
    expect(seen.some((e) => e.type === "tool.completed")).toBe(false);
    writeFileSync(join(workdir, "gate-1"), "");
    await readUntil(printed("stderr", "two"));
    expect(seen.some((e) => e.type === "tool.completed")).toBe(false);
    writeFileSync(join(workdir, "gate-2"), "");
    await readUntil((e) => e.type === "run.completed");

    const types = seen.map((e) => e.type);
    const completed = types.indexOf("tool.completed");
    expect(types.indexOf("tool.started")).toBeLessThan(types.indexOf("tool.output"));
    expect(types.lastIndexOf("tool.output")).toBeLessThan(completed);
    expect(outputText(seen)).toBe("one\nthree\n");
    expect(outputText(seen, "stderr")).toBe("two\n");
    const started = seen.find((e) => e.type === "tool.started");
    for (const e of seen.filter((x) => x.type === "tool.output")) {
      expect(e.data.tool_call_id).toBe(started?.data.tool_call_id);
    }
    // The final result keeps its own summary of the whole command.
    expect(seen[completed]?.data.output).toMatchObject({ exit_code: 0 });
    expect(seen[completed]?.data.exit_code).toBe(0);
    expect(resultText(seen[completed])).toContain("three");
    expect(seen.at(-1)?.data).toEqual({ status: "succeeded", exit_code: 0 });
    // What SSE delivered is what was stored, fenced and gap-free.
    const stored = await w.events(runId);
    expectGapFree(stored);
    expect(stored.map((e) => e.seq)).toEqual(seen.map((e) => e.seq));
  }, 90_000);

  it("a command printing a line a second for 5 seconds yields ≥ 3 tool.output events before tool.completed", async () => {
    const { w, thread, api } = await start(tier);
    const runId = await w.submit(thread, "for i in 1 2 3 4 5; do echo line $i; sleep 1; done");
    const seen: Event[] = [];
    for await (const frame of await openStream(api, runId)) {
      if (frame.event !== undefined) seen.push(eventOf(frame));
    }
    const types = seen.map((e) => e.type);
    const completed = types.indexOf("tool.completed");
    const before = types.slice(0, completed).filter((t) => t === "tool.output");
    expect(before.length).toBeGreaterThanOrEqual(3);
    expect(types.slice(completed).includes("tool.output")).toBe(false);
    expect(outputText(seen)).toBe("line 1\nline 2\nline 3\nline 4\nline 5\n");
    expect(types.at(-1)).toBe("run.completed");
  }, 90_000);

  it("cuts live output past the run's bound with one marker; tool.completed keeps its summary", async () => {
    const { w, thread } = await start(tier, {
      toolOutputMaxRunBytes: 1000,
      toolOutputMaxEventBytes: 256,
    });
    const line = "0123456789abcdefghij0123456789abcdefghij"; // 40 bytes + newline
    const runId = await w.submit(
      thread,
      `i=0; while [ $i -lt 100 ]; do echo ${line}; i=$((i+1)); done; echo done-marker`,
    );
    const run = await w.waitForRun(runId);
    expect(run.status).toBe("succeeded");
    const events = (await w.events(runId)) as Event[];
    expectGapFree(events);
    const outputs = events.filter((e) => e.type === "tool.output");
    const kept = outputs.filter((e) => !e.data.truncated);
    for (const e of kept) expect(Buffer.byteLength(String(e.data.text))).toBeLessThanOrEqual(256);
    expect(Buffer.byteLength(outputText(events))).toBe(1000);
    expect(`${line}\n`.repeat(100).startsWith(outputText(events))).toBe(true);
    const markers = outputs.filter((e) => e.data.truncated === true);
    expect(markers).toHaveLength(1);
    expect(outputs.at(-1)).toBe(markers[0]);
    expect(String(markers[0]?.data.text)).toContain("1000-byte bound");
    // Nothing past the bound reached the events; the result still has the whole output.
    expect(outputText(events)).not.toContain("done-marker");
    const completed = events.find((e) => e.type === "tool.completed");
    expect(resultText(completed)).toContain("done-marker");
  }, 90_000);
});
