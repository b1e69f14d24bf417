import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { expect, it } from "vitest";
import { freshDataRoot } from "../../support/data-root.ts";
import { processTierFixture } from "../../support/process-tier.ts";
import { materializeWorkdir, silentLogger, testConfig } from "./sandbox-fixture.ts";

const ROUNDS = 25;

it("a symlink swapped in for the UserWorkspace during setup never mounts anything outside it", async () => {
  const dataRoot = await freshDataRoot();
  const fixture = await processTierFixture({
    dataRoot: dataRoot.path,
    config: testConfig("unused"),
    logger: silentLogger,
  });
  const workspace = await materializeWorkdir(dataRoot.path, "racer", "work/r");
  await writeFile(join(workspace, "work/r/marker.txt"), "inside");
  const outside = join(dataRoot.path, "outside");
  await mkdir(join(outside, "work/r"), { recursive: true });
  await writeFile(join(outside, "work/r/marker.txt"), "OUTSIDE");
  const outsideIno = (await stat(outside)).ino;

  const swapper = spawn(
    process.execPath,
    [new URL("./symlink-swapper.ts", import.meta.url).pathname, workspace, outside],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: swapper.stdout });
  const seen: string[] = [];
  lines.on("line", (l) => seen.push(l));
  const outcomes = { mounted: 0, refused: 0, execRefused: 0 };
  try {
    await new Promise<void>((resolve) => lines.once("line", () => resolve()));
    const signal = () => AbortSignal.timeout(30_000);
    for (let g = 1; g <= ROUNDS; g++) {
      const created = await fixture.driver
        .create(
          {
            sandboxId: "race00000001",
            generation: g,
            uid: "racer",
            runtimeScopeId: randomUUID(),
            workdirPath: "work/r",
            nodeId: "race-node",
          },
          signal(),
        )
        .catch((e: unknown) => ({ ok: false as const, reason: "error", detail: String(e) }));
      if (!created.ok) {
        // Refused (a symlink or a missing directory met the no-follow walk): nothing exists.
        expect(["symlink_refused", "workdir_missing", "error"]).toContain(created.reason);
        outcomes.refused++;
        continue;
      }
      // The host-side bind is the real workspace, never the directory outside it.
      const bound = await stat(
        join(fixture.stateDir, created.container.containerId, "mnt/user-data"),
      );
      expect(bound.ino).not.toBe(outsideIno);
      const ran = await fixture.driver
        .exec(
          created.container,
          { cmd: ["cat", "/home/gem/user-data/work/r/marker.txt"] },
          signal(),
        )
        .catch(() => undefined);
      if (ran?.ok) {
        expect(ran.result.stdout.bytes.toString()).toBe("inside");
        outcomes.mounted++;
      } else {
        outcomes.execRefused++;
      }
      await fixture.driver.destroy(created.container, signal());
    }
  } finally {
    swapper.stdin.end();
    await new Promise((resolve) => swapper.once("exit", resolve));
    await fixture.cleanup();
    await dataRoot.remove();
  }
  // The race really ran (swaps happened) and both outcomes were exercised.
  expect(JSON.parse(seen.at(-1) ?? "{}").swaps).toBeGreaterThan(100);
  expect(outcomes.mounted + outcomes.refused + outcomes.execRefused).toBe(ROUNDS);
  expect(outcomes.mounted).toBeGreaterThan(0);
});
