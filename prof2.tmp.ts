import { mkdirSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { createCheckpointStore, detectCheckpointMode } from "./agent-host/checkpoints/checkpoint-store.ts";
import { createCheckpointSyscalls } from "./agent-host/checkpoints/checkpoint-syscalls.ts";
import { createLibcSyscalls, createPathResolver } from "./agent-host/workspace/index.ts";
import { freshDataRoot } from "./tests/support/data-root.ts";
const root = await freshDataRoot();
const sys = createLibcSyscalls(); const cp = createCheckpointSyscalls();
const mode = detectCheckpointMode({ dataRoot: root.path, sys, cp });
const store = createCheckpointStore({ dataRoot: root.path, sys, resolver: createPathResolver(sys), cp, mode, maxEntries: 100000, maxDepth: 64 });
const W = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
const wd = join(root.path, "users", "bench", "workspace", W);
const chunk = Buffer.alloc(100 * 1024, 7);
for (let d = 0; d < 10; d++) { mkdirSync(join(wd, `d${d}`), { recursive: true }); for (let f = 0; f < 100; f++) writeFileSync(join(wd, `d${d}`, `f${f}`), chunk); }
for (let i = 0; i < 4; i++) { const t = performance.now(); await store.take("bench", W, randomUUID(), AbortSignal.timeout(60000)); console.log(mode, (performance.now() - t).toFixed(1), "ms"); }
await root.remove();
