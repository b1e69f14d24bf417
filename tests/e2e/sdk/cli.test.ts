import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type UsageData, Workcell } from "../../../sdk/src/index.ts";
import { type LocalWorkcell, startLocalWorkcell } from "../../support/local-workcell-process.ts";

// The `workcell` CLI as a user runs it (`node bin/workcell.ts`, the package's bin) against
// the local Workcell, with its own config file.

const REPO = join(import.meta.dirname, "../../..");

let local: LocalWorkcell;
let home: string;

type Result = { code: number; stdout: string; stderr: string };

function workcell(...args: string[]): Promise<Result> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ["bin/workcell.ts", ...args],
      {
        cwd: REPO,
        env: { ...process.env, WORKCELL_CONFIG: join(home, "config.json"), WORKCELL_TOKEN: "" },
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        done({ code, stdout, stderr });
      },
    );
  });
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "workcell-cli-"));
  local = await startLocalWorkcell();
}, 320_000);
afterAll(async () => {
  await local?.stop();
  await rm(home, { recursive: true, force: true });
});

describe("the workcell CLI", () => {
  test("login, run, files cat, changes; a failing run exits non-zero", async () => {
    const notYet = await workcell("run", "echo hi");
    expect(notYet.code).toBe(2);
    expect(notYet.stderr).toMatch(/workcell login/);

    const bad = await workcell("login", "--url", local.url, "--token", "not-a-token");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/unauthenticated/);
    await expect(stat(join(home, "config.json"))).rejects.toThrow();

    const login = await workcell(
      "login",
      "--url",
      local.url,
      "--token",
      await local.token("alice"),
    );
    expect(login.code).toBe(0);
    expect((await stat(join(home, "config.json"))).mode & 0o777).toBe(0o600);

    const run = await workcell("run", "echo hi > outputs/a.txt && echo written");
    expect(run).toMatchObject({ code: 0, stdout: "written\n" });
    expect(run.stderr).toMatch(/^run [0-9a-f-]{36} \(thread [0-9a-f-]{36}\)\n/);
    expect(run.stderr).toMatch(/> bash .*echo hi/);
    expect(run.stderr).toMatch(/succeeded\n$/);

    const cat = await workcell("files", "cat", "outputs/a.txt");
    expect(cat).toMatchObject({ code: 0, stdout: "hi\n" });

    const ls = await workcell("files", "ls", "outputs", "--json");
    expect(JSON.parse(ls.stdout).items.map((e: { name: string }) => e.name)).toEqual(["a.txt"]);

    const changes = await workcell("changes");
    expect(changes.stdout).toMatch(/added\s+3\s+outputs\/a\.txt/);

    const local_ = join(home, "notes.txt");
    await writeFile(local_, "from disk\n");
    expect((await workcell("files", "put", local_, "notes.txt")).code).toBe(0);
    expect((await workcell("files", "cat", "notes.txt")).stdout).toBe("from disk\n");
    expect((await workcell("files", "put", local_, "notes.txt")).code).toBe(1);
    expect((await workcell("files", "rm", "notes.txt")).code).toBe(0);
    const gone = await workcell("files", "cat", "notes.txt");
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/not_found/);

    // One step cannot both run the command and answer: the run fails at its step limit.
    const failing = await workcell("run", "echo never answered", "--max-steps", "1");
    expect(failing.code).toBe(1);
    expect(failing.stderr).toMatch(/\nfailed: /);

    // A failing command is the model's to handle (the run still succeeds); the terminal
    // shows which tool failed, and the status starts a line of its own.
    const toolFailed = await workcell("run", "echo partial; exit 3");
    expect(toolFailed.code).toBe(0);
    expect(toolFailed.stderr).toMatch(/\n! bash failed\n/);
    expect(toolFailed.stdout.endsWith("\n")).toBe(true);

    const json = await workcell("run", "echo json", "--json");
    expect(json.code).toBe(0);
    const lines = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.at(-2).type).toBe("run.completed");
    expect(lines.at(-1).run.status).toBe("succeeded");

    // Saved for a human to look at (the report quotes it).
    await writeFile(
      join(tmpdir(), "workcell-cli-output.txt"),
      [run, cat, changes, toolFailed, failing]
        .map((r) => `${r.stderr}${r.stdout}[exit ${r.code}]\n`)
        .join("\n"),
    );
    expect(await readFile(join(home, "config.json"), "utf8")).toContain(local.url);
  }, 300_000); // Twenty CLI processes and five runs: minutes on a loaded machine.

  test("threads and skills; admin commands need an admin token", async () => {
    const threads = await workcell("threads", "--json");
    expect(threads.code).toBe(0);
    expect(JSON.parse(threads.stdout).items.length).toBeGreaterThan(0);
    expect((await workcell("skills")).code).toBe(0);
    const refused = await workcell("admin", "skills");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/forbidden/);
    const admin = await local.token("root", { admin: true });
    const catalogue = await workcell("admin", "skills", "--token", admin);
    expect(catalogue.code).toBe(0);
    expect(catalogue.stdout).toMatch(/hello\s+builtin\s+0/);
    expect((await workcell("admin", "grant", "hello", "alice", "--token", admin)).code).toBe(0);
    expect((await workcell("skills")).stdout).toMatch(/hello\s+builtin/);
    expect((await workcell("admin", "revoke", "hello", "alice", "--token", admin)).code).toBe(0);
  });

  test("admin network sets a user's hosts; run --allow narrows them, and outside them is refused", async () => {
    const admin = await local.token("root", { admin: true });
    const network = (...args: string[]) =>
      workcell("admin", "network", "nina", ...args, "--token", admin, "--url", local.url);
    expect((await network()).stdout).toMatch(/nina\s+none\s+default\s+\(no network\)/);
    expect((await network("pypi.org,*.github.com")).stdout).toMatch(
      /nina\s+allowlist\s+admin\s+pypi\.org, \*\.github\.com/,
    );
    const nina = await local.token("nina");
    const refused = await workcell(
      "run",
      "echo hi",
      "--allow",
      "evil.test",
      "--token",
      nina,
      "--url",
      local.url,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/outside your network policy.*evil\.test/);
    expect(JSON.parse((await network("none", "--json")).stdout)).toMatchObject({
      policy: { mode: "none", allow: [] },
    });
  });

  test("admin limits: shown with their source; a change keeps the other overrides", async () => {
    const admin = await local.token("root", { admin: true });
    const limits = (...args: string[]) =>
      workcell("admin", "limits", "dana", ...args, "--token", admin);
    expect((await limits()).stdout).toMatch(/max_concurrent_runs\s+4\s+default/);
    expect((await limits("max_concurrent_runs=2")).stdout).toMatch(
      /max_concurrent_runs\s+2\s+admin/,
    );
    const both = await limits("workspace_bytes=1000000");
    expect(both.stdout).toMatch(/workspace_bytes\s+1000000\s+admin/);
    expect(both.stdout).toMatch(/max_concurrent_runs\s+2\s+admin/);
    const reset = await limits("max_concurrent_runs=default", "--json");
    expect(JSON.parse(reset.stdout)).toMatchObject({
      uid: "dana",
      limits: { max_concurrent_runs: 4, workspace_bytes: 1000000 },
      overrides: { workspace_bytes: 1000000 },
    });
    const bad = await limits("max_concurrent_runs=lots");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/<limit>=<number>/);
    expect((await limits()).stdout).toMatch(/max_concurrent_runs\s+4\s+default/);
    const refused = await workcell("admin", "limits", "dana", "max_concurrent_runs=9");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/forbidden/);
    expect((await limits()).stdout).toMatch(/max_concurrent_runs\s+4\s+default/);
  });

  test("usage: the caller's figures as GET /v1/usage answers them, with the limits an admin sets", async () => {
    const clientOf = async (uid: string) =>
      new Workcell({ baseUrl: local.url, token: await local.token(uid) });
    const alice = await clientOf("alice");
    // The bytes are measured a few seconds late (decision 0049): compare a CLI answer with
    // the API's read just before it until no write of the first test is still being seen.
    const cliMatchesApi = async (api: Workcell, ...args: string[]): Promise<UsageData> => {
      let answered: UsageData | undefined;
      await expect
        .poll(
          async () => {
            answered = await api.usage();
            const json = await workcell("usage", "--json", ...args);
            expect(json.code).toBe(0);
            const printed = JSON.parse(json.stdout) as UsageData;
            return isDeepStrictEqual(printed, answered) ? "same" : { printed, answered };
          },
          { timeout: 30_000, interval: 500 },
        )
        .toBe("same");
      if (answered === undefined) throw new Error("no usage read");
      return answered;
    };
    const before = await cliMatchesApi(alice);
    // The first test's runs wrote outputs/a.txt ("hi\n") and more: something is stored.
    expect(before.workspace_bytes).toBeGreaterThanOrEqual(3);
    expect(before.workspace_inodes).toBeGreaterThanOrEqual(3);
    expect(before.running_runs + before.queued_runs).toBe(0);

    const human = await workcell("usage");
    expect(human.code).toBe(0);
    const u = await cliMatchesApi(alice);
    expect(human.stdout).toMatch(/^\s+USED\s+LIMIT\n/);
    expect(human.stdout).toMatch(
      new RegExp(`\nworkspace bytes\\s+${u.workspace_bytes}\\s+${u.limits.workspace_bytes}\n`),
    );
    expect(human.stdout).toMatch(
      new RegExp(`\nworkspace inodes\\s+${u.workspace_inodes}\\s+${u.limits.workspace_inodes}\n`),
    );
    expect(human.stdout).toMatch(
      new RegExp(`\nrunning runs\\s+0\\s+${u.limits.max_concurrent_runs}\n`),
    );
    expect(human.stdout).toMatch(/\nqueued runs\s+0\s*$/);

    const admin = await local.token("root", { admin: true });
    const set = await workcell(
      "admin",
      "limits",
      "alice",
      "max_concurrent_runs=3",
      "--token",
      admin,
    );
    expect(set.code).toBe(0);
    const limited = await cliMatchesApi(alice);
    expect(limited.limits.max_concurrent_runs).toBe(3);
    expect((await workcell("usage")).stdout).toMatch(/\nrunning runs\s+0\s+3\n/);
    await workcell("admin", "limits", "alice", "max_concurrent_runs=default", "--token", admin);

    // Another user's token answers that user's figures, not alice's.
    const newcomer = await cliMatchesApi(
      await clientOf("uma"),
      "--token",
      await local.token("uma"),
    );
    expect(newcomer).toMatchObject({ workspace_bytes: 0, workspace_inodes: 0, running_runs: 0 });
    await writeFile(join(tmpdir(), "workcell-cli-usage-output.txt"), human.stdout);
  });

  test("admin runtime: each node's tiers and Runtime Assets", async () => {
    const admin = await local.token("root", { admin: true });
    const human = await workcell("admin", "runtime", "--token", admin);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^NODE\s+STATE\s+TIER \/ ASSETS\s+READY\s+DETAIL\n/);
    expect(human.stdout).toMatch(/local-[0-9a-f]+\s+active\s+container\s+yes\s/);
    expect(human.stdout).toMatch(/\sassets /);
    // The local Workcell runs the egress proxy too (default policy: none).
    expect(human.stdout).toMatch(/\segress proxy\s+yes\s+tiers: .*default policy: none/);
    const json = JSON.parse(
      (await workcell("admin", "runtime", "--json", "--token", admin)).stdout,
    );
    expect(json.items).toHaveLength(1);
    expect(json.items[0].sandbox_tiers).toContainEqual(
      expect.objectContaining({ tier: "container", ready: true }),
    );
    await writeFile(join(tmpdir(), "workcell-cli-admin-output.txt"), human.stdout);
  });
});
