import { describe, expect, test } from "vitest";
import {
  type AcquireAsk,
  type AcquireDecision,
  decideAcquire,
  type NodeView,
} from "../../../agent-host/sandbox/lifecycle/decide-acquire.ts";
import type { SandboxRow } from "../../../agent-host/sandbox/lifecycle/sandbox-store.ts";

// decideAcquire is the whole policy of the locked slow path (docs/decisions/0091): every
// row state × request × node view it can meet, and what it decides. The effects (create,
// destroy after the transaction) are the integration suites' (tests/integration/sandbox).

const HERE = "node-a";
const ELSEWHERE = "node-b";
const WORKDIR = "projects/p1";
const CONTAINER = "c0ffee";
const PROCESS = "process-1234";

function row(overrides: Partial<SandboxRow> = {}): SandboxRow {
  const t = new Date("2026-01-01T00:00:00Z");
  return {
    sandboxId: "0123456789ab",
    uid: "alice",
    runtimeScopeId: "00000000-0000-4000-8000-000000000001",
    workdirPath: WORKDIR,
    fileView: "workspace",
    generation: 7,
    nodeId: HERE,
    state: "running",
    instanceId: CONTAINER,
    lastUsedAt: t,
    releasedAt: null,
    createdAt: t,
    updatedAt: t,
    ...overrides,
  };
}

const node = (overrides: Partial<NodeView> = {}): NodeView => ({
  id: HERE,
  state: "active",
  rowNodeLost: false,
  rowRunningHere: true,
  ...overrides,
});

const ask = (overrides: Partial<AcquireAsk> = {}): AcquireAsk => ({
  workdirPath: WORKDIR,
  ...overrides,
});

const released = new Date("2026-01-01T00:01:00Z");
const quiesced: AcquireDecision = {
  kind: "refuse",
  refusal: { ok: false, reason: "node_quiesced" },
};

type Case = [string, SandboxRow | undefined, AcquireAsk, NodeView, AcquireDecision];

const cases: Case[] = [
  ["no row: create", undefined, ask(), node(), { kind: "create" }],
  ["no row, quiesced: refuse", undefined, ask(), node({ state: "quiesced" }), quiesced],
  ...(["failed", "destroyed", "destroying", "creating"] as const).map(
    (state): Case => [`row ${state}: create`, row({ state }), ask(), node(), { kind: "create" }],
  ),
  ["running here, alive: reuse", row(), ask(), node(), { kind: "reuse", generation: 7 }],
  [
    "running here, alive, same tier and view named: reuse",
    row({ fileView: "workdir" }),
    ask({ tier: "container", fileView: "workdir" }),
    node(),
    { kind: "reuse", generation: 7 },
  ],
  [
    "running here, dead: replace dead",
    row(),
    ask(),
    node({ rowRunningHere: false }),
    { kind: "replace_dead", generation: 7, instanceId: CONTAINER },
  ],
  [
    "running here with no container id, dead: replace dead",
    row({ instanceId: null }),
    ask(),
    node({ rowRunningHere: false }),
    { kind: "replace_dead", generation: 7, instanceId: null },
  ],
  ["running here, quiesced: refuse", row(), ask(), node({ state: "quiesced" }), quiesced],
  [
    "another Workdir: mismatch without in-use",
    row(),
    ask({ workdirPath: "projects/other" }),
    node(),
    {
      kind: "refuse",
      refusal: { ok: false, reason: "sandbox_identity_mismatch", liveWorkdirPath: WORKDIR },
    },
  ],
  [
    "another Workdir even when released: mismatch",
    row({ releasedAt: released }),
    ask({ workdirPath: "projects/other" }),
    node(),
    {
      kind: "refuse",
      refusal: { ok: false, reason: "sandbox_identity_mismatch", liveWorkdirPath: WORKDIR },
    },
  ],
  [
    "other tier, still in use: mismatch naming the live tier and view",
    row(),
    ask({ tier: "process" }),
    node(),
    {
      kind: "refuse",
      refusal: {
        ok: false,
        reason: "sandbox_identity_mismatch",
        liveWorkdirPath: WORKDIR,
        inUse: { tier: "container", fileView: "workspace" },
      },
    },
  ],
  [
    "other file view, still in use: mismatch",
    row({ instanceId: PROCESS }),
    ask({ fileView: "workdir" }),
    node(),
    {
      kind: "refuse",
      refusal: {
        ok: false,
        reason: "sandbox_identity_mismatch",
        liveWorkdirPath: WORKDIR,
        inUse: { tier: "process", fileView: "workspace" },
      },
    },
  ],
  [
    "other tier, kept warm: replace kept-warm",
    row({ releasedAt: released }),
    ask({ tier: "process" }),
    node(),
    { kind: "replace_kept_warm", generation: 7 },
  ],
  [
    "other file view, kept warm: replace kept-warm",
    row({ releasedAt: released, fileView: "workdir" }),
    ask(),
    node(),
    { kind: "replace_kept_warm", generation: 7 },
  ],
  [
    "other view, kept warm, quiesced: refuse (nothing destroyed)",
    row({ releasedAt: released }),
    ask({ fileView: "workdir" }),
    node({ state: "quiesced" }),
    quiesced,
  ],
  [
    "same mounts, kept warm and alive: reuse",
    row({ releasedAt: released }),
    ask(),
    node(),
    { kind: "reuse", generation: 7 },
  ],
  [
    "another node, alive: refuse, the run belongs there",
    row({ nodeId: ELSEWHERE }),
    ask(),
    node({ rowRunningHere: false }),
    { kind: "refuse", refusal: { ok: false, reason: "sandbox_on_other_node", nodeId: ELSEWHERE } },
  ],
  [
    "another node, lost: replace here",
    row({ nodeId: ELSEWHERE }),
    ask(),
    node({ rowNodeLost: true, rowRunningHere: false }),
    { kind: "replace_other_node", generation: 7, otherNodeId: ELSEWHERE, nodeLost: true },
  ],
  [
    "another node, alive, only kept warm (the affinity wait passed): give it up, create here",
    row({ nodeId: ELSEWHERE, releasedAt: released }),
    ask(),
    node({ rowRunningHere: false }),
    { kind: "replace_other_node", generation: 7, otherNodeId: ELSEWHERE, nodeLost: false },
  ],
  [
    "another node, alive, kept warm, quiesced here: refuse (nothing given up)",
    row({ nodeId: ELSEWHERE, releasedAt: released }),
    ask(),
    node({ rowRunningHere: false, state: "quiesced" }),
    quiesced,
  ],
  [
    "another node, lost, quiesced here: refuse",
    row({ nodeId: ELSEWHERE }),
    ask(),
    node({ rowNodeLost: true, state: "quiesced" }),
    quiesced,
  ],
  [
    "another node, another Workdir: mismatch before anything else",
    row({ nodeId: ELSEWHERE }),
    ask({ workdirPath: "projects/other" }),
    node({ rowNodeLost: true }),
    {
      kind: "refuse",
      refusal: { ok: false, reason: "sandbox_identity_mismatch", liveWorkdirPath: WORKDIR },
    },
  ],
];

describe("decideAcquire", () => {
  test.each(cases)("%s", (_name, r, request, view, expected) => {
    expect(decideAcquire(r, request, view)).toEqual(expected);
  });

  test("a destroy is never decided for a generation a run still uses", () => {
    for (const tier of ["container", "process"] as const) {
      for (const fileView of ["workspace", "workdir"] as const) {
        const d = decideAcquire(row({ releasedAt: null }), ask({ tier, fileView }), node());
        expect(["reuse", "refuse"]).toContain(d.kind);
      }
    }
  });
});
