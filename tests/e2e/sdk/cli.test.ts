import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { formatBytes, formatCount } from "../../../sdk/cli/human-units.ts";
import { runCli } from "../../../sdk/cli/run-cli.ts";
import { type UsageData, Workcell } from "../../../sdk/src/index.ts";
import { type LocalWorkcell, startLocalWorkcell } from "../../support/local-workcell-process.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { projectWithPackedSdk, readmeBlock, runIn, TSC } from "./packed-sdk.ts";

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

/** The CLI with its own config file, with `input` on its standard input. */
function workcellAt(config: string, args: readonly string[], input = ""): Promise<Result> {
  return new Promise((done) => {
    const child = execFile(
      process.execPath,
      ["bin/workcell.ts", ...args],
      { cwd: REPO, env: { ...process.env, WORKCELL_CONFIG: config, WORKCELL_TOKEN: "" } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        done({ code, stdout, stderr });
      },
    );
    child.stdin?.end(input);
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

    // The shell model runs one command: its exit code is the CLI's, and the outcome says
    // the command failed (never "succeeded" next to a failure).
    const toolFailed = await workcell("run", "echo partial; exit 3");
    expect(toolFailed.code).toBe(3);
    expect(toolFailed.stderr).toMatch(/\n! bash failed \(exit 3\)\n/);
    expect(toolFailed.stderr).toMatch(/\ncommand failed \(exit 3\)\n$/);
    expect(toolFailed.stderr).not.toMatch(/succeeded/);
    expect(toolFailed.stdout.endsWith("\n")).toBe(true);
    expect(await workcell("run", "true")).toMatchObject({ code: 0 });

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

  test("a run cancelled from another terminal exits 130 and says so", async () => {
    const child = spawn(
      process.execPath,
      ["bin/workcell.ts", "run", "echo go-$((1+1)); sleep 600"],
      {
        cwd: REPO,
        env: { ...process.env, WORKCELL_CONFIG: join(home, "config.json"), WORKCELL_TOKEN: "" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
    // The command is running once its first line came back (go-2: not the command's text).
    await pollUntil(async () => stderr.includes("go-2") || child.exitCode !== null, 120_000);
    const runId = /^run ([0-9a-f-]{36})/.exec(stderr)?.[1];
    expect(runId).toBeDefined();
    expect((await workcell("cancel", String(runId))).code).toBe(0);
    expect(await exited).toBe(130);
    expect(stderr).toMatch(/\ncancelled\n$/);
  }, 180_000);

  test("the packed SDK in an empty project: the README quick start with plain node, tsc of it as .ts, npx workcell", async () => {
    const project = await projectWithPackedSdk();
    try {
      const { dir } = project;
      const env = {
        ...process.env,
        WORKCELL_BASE_URL: local.url,
        WORKCELL_TOKEN: await local.token("quinn"),
        WORKCELL_CONFIG: join(dir, "workcell-config.json"),
      };
      const quickStart = await readmeBlock("js");
      await writeFile(join(dir, "quickstart.mjs"), quickStart);
      const node = await runIn(dir, process.execPath, ["quickstart.mjs"], env);
      expect(node.stderr).toBe("");
      expect(node).toMatchObject({ code: 0 });
      expect(node.stdout).toMatch(/^run\.status\n[\s\S]*\nrun\.completed\nsucceeded hi\n\n/);
      expect(node.stdout).toMatch(/path: 'outputs\/a\.txt'/);

      await writeFile(join(dir, "quickstart.ts"), quickStart);
      const tsc = await runIn(dir, process.execPath, [
        TSC,
        "--noEmit",
        "--strict",
        "--module",
        "nodenext",
        "--target",
        "es2023",
        "quickstart.ts",
      ]);
      expect(tsc.stdout + tsc.stderr).toBe("");
      expect(tsc.code).toBe(0);

      const help = await runIn(dir, "npx", ["--no-install", "workcell", "--help"], env);
      expect(help).toMatchObject({ code: 0, stderr: "" });
      expect(help.stdout).toMatch(/workcell run "<input>"/);
      const failed = await runIn(dir, "npx", ["--no-install", "workcell", "run", "exit 3"], env);
      expect(failed.code).toBe(3);
      expect(failed.stderr).toMatch(/command failed \(exit 3\)\n$/);
      const ok = await runIn(dir, "npx", ["--no-install", "workcell", "run", "echo from-npx"], env);
      expect(ok).toMatchObject({ code: 0, stdout: "from-npx\n" });
      // Nothing of the repository was used: the CLI is the tarball's compiled bin.
      expect(await realpath(join(dir, "node_modules/.bin/workcell"))).toBe(
        await realpath(join(dir, "node_modules/@workcell/sdk/dist/cli/workcell.js")),
      );
    } finally {
      await project.remove();
    }
  }, 600_000);

  test("tokens: a PAT created from the CLI logs in pasted on stdin, works, and is refused once revoked", async () => {
    const signIn = await local.token("tess");
    const config = join(home, "tess.json");
    const as = (...args: string[]) => workcellAt(config, args);
    const created = await as(
      "tokens",
      "create",
      "ci",
      "--scope",
      "runs",
      "--expires-days",
      "7",
      "--token",
      signIn,
      "--url",
      local.url,
    );
    expect(created).toMatchObject({ code: 0, stderr: expect.not.stringMatching(/error/) });
    const pat = created.stdout.trim();
    expect(pat).toMatch(/^wct_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toMatch(/shown this once/);

    const login = await workcellAt(config, ["login", "--url", local.url], `${pat}\n`);
    expect(login).toMatchObject({ code: 0 });
    expect((await stat(config)).mode & 0o777).toBe(0o600);
    expect(await readFile(config, "utf8")).toContain(pat);
    expect((await as("run", "echo with-a-pat")).stdout).toBe("with-a-pat\n");
    // Outside its scope (files), and token management (a sign-in token's), it is refused.
    const files = await as("files", "ls");
    expect(files.code).toBe(1);
    expect(files.stderr).toMatch(/lacks the 'files' scope[^\n]*\(forbidden, HTTP 403\)/);
    expect((await as("tokens", "list")).stderr).toMatch(/sign-in token/);

    const listed = JSON.parse((await as("tokens", "list", "--json", "--token", signIn)).stdout);
    const id = listed.items.find((t: { name: string }) => t.name === "ci").token_id;
    expect((await as("tokens", "revoke", id, "--token", signIn)).code).toBe(0);
    const after = await as("threads");
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/unauthenticated/);
    expect(after.stderr + created.stderr + login.stdout + login.stderr).not.toContain(
      pat.slice(-43),
    );
    expect(local.output()).not.toContain(pat.slice(-43));
  }, 120_000);

  test("secrets: set reads the value from stdin, list and the SDK never show it, rm deletes; nothing logs it", async () => {
    const token = await local.token("sela");
    const config = join(home, "sela.json");
    const value = `ghp_cli_${Date.now().toString(36)}_secretvalue`;
    const as = (args: string[], input = "") =>
      workcellAt(config, [...args, "--token", token, "--url", local.url], input);
    const set = await as(
      ["secrets", "set", "GITHUB_TOKEN", "--host", "api.github.com", "--host", "github.com"],
      `${value}\n`,
    );
    expect(set).toMatchObject({ code: 0 });
    expect(set.stdout).toMatch(/stored GITHUB_TOKEN for api\.github\.com, github\.com/);
    const listed = await as(["secrets", "list"]);
    expect(listed.stdout).toMatch(
      /GITHUB_TOKEN\s+api\.github\.com,github\.com\s+Authorization\s+Bearer \{value\}/,
    );
    const sdk = new Workcell({ baseUrl: local.url, token });
    expect((await sdk.secrets.list()).map((s) => s.name)).toEqual(["GITHUB_TOKEN"]);
    const noHost = await as(["secrets", "set", "OTHER"], "x\n");
    expect(noHost.code).toBe(2);
    expect((await as(["secrets", "rm", "GITHUB_TOKEN"])).code).toBe(0);
    expect(await sdk.secrets.list()).toEqual([]);
    for (const text of [set.stdout, set.stderr, listed.stdout, listed.stderr, local.output()])
      expect(text).not.toContain(value);
  }, 120_000);

  test("login --local mints a dev token; every command has its own --help; wrong input prints no stack", async () => {
    const config = join(home, "local.json");
    const login = await workcellAt(config, ["login", "--url", local.url, "--local", "lou"]);
    expect(login.code).toBe(0);
    expect((await workcellAt(config, ["threads", "--json"])).code).toBe(0);
    for (const command of [
      "login",
      "run",
      "threads",
      "files",
      "attach",
      "changes",
      "cancel",
      "skills",
      "usage",
      "tokens",
      "admin",
      "migrate",
      "keys",
      "doctor",
    ]) {
      const help = await workcell(command, "--help");
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toMatch(new RegExp(`^usage: workcell ${command}\\b`));
      expect(help.stderr, command).toBe("");
    }
    for (const wrong of [
      ["run", "--nonsense"],
      ["migrate", "--nonsense"],
      ["tokens", "create", "x", "--scope", "root"],
      ["tokens", "create", "x", "--expires-days", "many"],
      ["login", "--url", "not a url", "--token", "t"],
    ]) {
      const answer = await workcellAt(config, wrong, "");
      expect(answer.code, wrong.join(" ")).toBeGreaterThan(0);
      expect(answer.stderr, wrong.join(" ")).not.toMatch(/\n\s+at /);
    }
    // `npm run token`: its help, and a data directory that is not there, without a stack.
    const token = (...args: string[]) =>
      runIn(REPO, process.execPath, ["infra/local/mint-token.ts", ...args]);
    const tokenHelp = await token("--help");
    expect(tokenHelp).toMatchObject({ code: 0, stderr: "" });
    expect(tokenHelp.stdout).toMatch(/^usage: npm run token -- <uid>/);
    const missing = await token("alice", "--data-dir", join(home, "no/such/dir"));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No local Workcell data at .*start it first/);
    expect(missing.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);

  test("on a terminal the shell reply is not printed under its own output a second time", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(
      ["run", "echo once-$((1+1))", "--url", local.url, "--token", await local.token("tom")],
      {
        stdout: (t) => out.push(t),
        stderr: (t) => err.push(t),
        env: { WORKCELL_CONFIG: join(home, "tty.json") },
        stdoutIsTerminal: true,
      },
      AbortSignal.timeout(120_000),
    );
    expect(code).toBe(0);
    const screen = err.join("") + out.join("");
    expect(screen.match(/once-2/g)).toHaveLength(1);
    expect(err.join("")).toMatch(/\nsucceeded\n$/);
  }, 120_000);

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
    // Human units: "12 KiB of 10 GiB", never raw byte counts.
    expect(human.stdout).toMatch(
      new RegExp(
        `^workspace\\s+${formatBytes(u.workspace_bytes)} of ${formatBytes(u.limits.workspace_bytes)}\n`,
      ),
    );
    expect(human.stdout).toMatch(/ of \d+(\.\d)? GiB\n/);
    expect(human.stdout).toMatch(
      new RegExp(`\nfiles\\s+${u.workspace_inodes} of ${formatCount(u.limits.workspace_inodes)}\n`),
    );
    expect(human.stdout).toMatch(
      new RegExp(`\nrunning runs\\s+0 of ${u.limits.max_concurrent_runs}\n`),
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
    expect((await workcell("usage")).stdout).toMatch(/\nrunning runs\s+0 of 3\n/);
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
