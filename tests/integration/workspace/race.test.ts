import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { RESOLVER_KINDS, setupWorkspace, type WorkspaceEnv } from "./harness.ts";

// A separate process swaps a directory of the Workdir for a symlink to outside/ and back as
// fast as it can, while this process writes, reads, lists, copies and deletes through that
// directory. Whatever interleaving happens, every operation either works inside the
// Workdir or is refused: no byte lands outside, no outside byte is read.

const ITERATIONS = 3_000;

interface Swapper {
  readonly child: ChildProcess;
  /** Resolves once the swapper runs, so the whole loop below races it. */
  readonly ready: Promise<void>;
  /** Stops the swapper and returns how many swaps it made. */
  stop(): Promise<number>;
}

function startSwapper(target: string, linkTo: string): Swapper {
  const child = spawn(process.execPath, [join(import.meta.dirname, "swapper.ts"), target, linkTo], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  let out = "";
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
    if (out.includes("ready\n")) markReady();
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  return {
    child,
    ready,
    async stop() {
      child.stdin?.end();
      await exited;
      return Number.parseInt(/swaps (\d+)/.exec(out)?.[1] ?? "0", 10);
    },
  };
}

/** Expected refusals under the race: the directory is a symlink, or briefly missing. */
function isRefusal(err: unknown): boolean {
  return (
    err instanceof WorkcellError &&
    ["forbidden", "not_found", "conflict", "invalid_request"].includes(err.code)
  );
}

describe.each(RESOLVER_KINDS)("race: directory swapped for a symlink (%s resolver)", (kind) => {
  let env: WorkspaceEnv;
  let swapper: Swapper | undefined;
  beforeEach(async () => {
    env = await setupWorkspace(kind);
  });
  afterEach(async () => {
    if (swapper) await swapper.stop();
    swapper = undefined;
    await env.finish();
  });

  it(`${ITERATIONS} rounds of write / read / list / stat / mkdir / copy: nothing outside is touched or read`, async () => {
    mkdirSync(env.at("dir"));
    writeFileSync(env.at("dir/victim.txt"), "inside");
    // outside/ holds secret.txt: a successful read or listing of it through dir/ would be a leak.
    swapper = startSwapper(env.at("dir"), env.outside);
    await swapper.ready;
    const seen = { ok: 0, refused: 0 };
    const track = async (
      op: () => Promise<unknown>,
      check: (value: unknown) => void = () => {},
    ) => {
      try {
        check(await op());
        seen.ok++;
      } catch (err) {
        if (!isRefusal(err)) throw err;
        seen.refused++;
      }
    };
    for (let i = 0; i < ITERATIONS; i++) {
      await track(() => env.fs.writeFile(`dir/w-${i}.txt`, `payload ${i}`));
      await track(() => env.fs.writeBatch("dir", [{ name: `b-${i}.txt`, source: "batch" }]));
      await track(() => env.fs.mkdir(`dir/m-${i}`));
      await track(
        () => env.fs.readFile("dir/victim.txt"),
        (bytes) => expect(String(bytes)).toBe("inside"),
      );
      await track(
        () => env.fs.readFile("dir/secret.txt"),
        () => expect.fail("read outside/secret.txt"),
      );
      await track(
        () => env.fs.stat("dir/secret.txt"),
        () => expect.fail("stat outside/secret.txt"),
      );
      await track(
        () => env.fs.list("dir"),
        (listing) => {
          const names = (listing as { items: { name: string }[] }).items.map((e) => e.name);
          expect(names).not.toContain("secret.txt");
        },
      );
      if (i % 100 === 0) {
        await track(() => env.fs.copy("dir", `copy-${i}`, { recursive: true }));
        await track(() => env.fs.writeFile("dir/victim.txt", "inside", { overwrite: true }));
      }
    }
    const swaps = await swapper.stop();
    swapper = undefined;
    // The race was real: the swapper ran, and some operations met the symlink.
    expect(swaps).toBeGreaterThan(0);
    expect(seen.refused).toBeGreaterThan(0);
    expect(seen.ok).toBeGreaterThan(0);
    // Everything that was written is in the Workdir (in dir/ or where the swapper parked it).
    for (const copy of readdirSync(env.workdir).filter((n) => n.startsWith("copy-"))) {
      expect(existsSync(env.at(`${copy}/secret.txt`))).toBe(false);
    }
  });

  it(`${ITERATIONS / 10} recursive deletes while a subdirectory is swapped: outside/ survives`, async () => {
    swapper = startSwapper(env.at("tree/sub"), env.outside);
    await swapper.ready;
    let refused = 0;
    for (let i = 0; i < ITERATIONS / 10; i++) {
      // The tree is built through the layer too: a plain fs call here would itself follow
      // the swapper's symlink and write into outside/.
      for (const setup of [
        () => env.fs.mkdir("tree/sub", { parents: true }),
        ...Array.from({ length: 5 }, (_, f) => () => env.fs.writeFile(`tree/sub/f${f}`, "x")),
      ]) {
        try {
          await setup();
        } catch (err) {
          if (!isRefusal(err)) throw err;
        }
      }
      try {
        await env.fs.remove("tree", { recursive: true });
      } catch (err) {
        if (!isRefusal(err)) throw err;
        refused++;
      }
      // Reset between rounds (the swapper may have parked sub/): the attacker's leftovers.
      try {
        await env.fs.remove("tree", { recursive: true });
      } catch {
        // The swapper may hold it as a symlink this instant; the next round recreates it.
      }
    }
    await swapper.stop();
    swapper = undefined;
    expect(refused).toBeGreaterThanOrEqual(0);
  });
});
