import { randomUUID } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RESTORE_STEPS, recoverRestores } from "../../../agent-host/checkpoints/restore-workdir.ts";
import { spawnJsonLineChild } from "../../support/json-line-child.ts";
import { agentRun, plantTree } from "./agent-trees.ts";
import { STORE_MODES, type StoreEnv, setupStore, UID, WORKDIR } from "./checkpoint-fixture.ts";
import { treeManifest } from "./tree-manifest.ts";

const CHILD = new URL("./restore-child.ts", import.meta.url);
/** The steps after which the next start rolls forward to the restored tree. */
const SWAPPED = new Set([
  "ready",
  "clearing",
  "cleared",
  "filling",
  "filled",
  "refinishing",
  "finished",
  "cleaned",
]);

describe.each(STORE_MODES)("a restore killed with -9, %s mode", (mode) => {
  let env: StoreEnv | undefined;
  afterEach(async () => {
    await env?.root.remove();
    env = undefined;
  });

  it.each(RESTORE_STEPS)(
    "after step %s: the next start leaves the old or the restored tree, never a mix",
    async (step) => {
      env = await setupStore(mode);
      plantTree(env.workdir);
      const checkpointId = randomUUID();
      await env.store.take(UID, WORKDIR, checkpointId, AbortSignal.timeout(60_000));
      const restored = treeManifest(env.workdir, true);
      agentRun(env.workdir);
      const old = treeManifest(env.workdir, true);

      const restoreId = randomUUID();
      const child = spawnJsonLineChild(
        CHILD,
        {
          dataRoot: env.root.path,
          mode: env.store.mode,
          uid: UID,
          workdirPath: WORKDIR,
          checkpointId,
          restoreId,
          stopAt: step,
        },
        "restore child",
      );
      expect(await child.next("stopped")).toMatchObject({ step });
      await child.kill9();

      const outcomes = recoverRestores(env.store);
      expect(outcomes.get(restoreId)).toBe(SWAPPED.has(step) ? "completed" : "rolled_back");
      expect(treeManifest(env.workdir, true)).toEqual(SWAPPED.has(step) ? restored : old);
      // Nothing of the restore is left behind, and a second start finds nothing to do.
      expect(readdirSync(join(env.workdir, ".."))).toEqual([WORKDIR.split("/")[1]]);
      expect(readdirSync(env.storeDir)).toEqual([checkpointId]);
      expect(recoverRestores(env.store).size).toBe(0);
    },
  );
});
