import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runCli } from "../../../sdk/cli/run-cli.ts";
import { type Approval, ConflictError, Workcell } from "../../../sdk/src/index.ts";
import { screenshot } from "../../support/chromium.ts";
import { count, signIn, text, visible, WAIT } from "./console-page.ts";
import { consoleSuite } from "./console-suite.ts";

// Approvals as a person meets them (docs/api.md "Approvals"), against the real local
// Workcell: the SDK starts runs whose bash call waits; the CLI lists and approves one; the
// console shows the other's pending call in the chat with its full arguments, a badge on
// the thread, and approving it there streams the rest of the run.

const suite = consoleSuite();
let configDir = "";
beforeAll(async () => {
  configDir = await mkdtemp(join(tmpdir(), "workcell-approvals-cli-"));
});
afterAll(async () => {
  await rm(configDir, { recursive: true, force: true });
});
const url = () => suite.workcell().url;
const COMMAND = "mkdir -p outputs && echo approved-effect && echo ran >> outputs/effect.txt";

async function cli(token: string, ...args: string[]) {
  return cliWith(token, undefined, ...args);
}

/** The CLI as a function, with `stdin` standing in for a terminal when given. */
async function cliWith(
  token: string,
  stdin: { isTTY: boolean; readLine(): Promise<string> } | undefined,
  ...args: string[]
) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(
    [...args, "--url", url(), "--token", token],
    {
      stdout: (t) => {
        out.push(t);
      },
      stderr: (t) => {
        err.push(t);
      },
      env: { WORKCELL_CONFIG: join(configDir, "config.json") },
      ...(stdin === undefined ? {} : { stdin }),
    },
    AbortSignal.timeout(60_000),
  );
  return { code, stdout: out.join(""), stderr: err.join("") };
}

async function pendingOf(client: Workcell, runId: string): Promise<Approval> {
  const run = await client.runs.get(runId);
  await expect.poll(async () => (await run.refresh()).status, WAIT).toBe("awaiting_approval");
  const [approval] = await run.approvals();
  if (approval === undefined) throw new Error("no approval");
  return approval;
}

describe("approvals", () => {
  test("SDK and CLI: list the waiting call, approve it once, a second decision is a conflict", async () => {
    const token = await suite.workcell().token("ada");
    const client = new Workcell({ baseUrl: url(), token });
    const run = await client.runs.create(COMMAND, { agent: { approvals: { tools: ["bash"] } } });
    const approval = await pendingOf(client, run.id);
    expect(approval.data).toMatchObject({ tool: "bash", arguments: { command: COMMAND } });

    const listed = await cli(token, "approvals", run.id, "--json");
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).items).toEqual([
      expect.objectContaining({ approval_id: approval.id, status: "pending" }),
    ]);
    const approved = await cli(token, "approve", approval.id, "--run", run.id);
    expect(approved).toMatchObject({ code: 0 });
    expect(approved.stdout).toContain("approved");
    expect((await run.wait()).status).toBe("succeeded");
    await expect(approval.deny({ note: "too late" })).rejects.toBeInstanceOf(ConflictError);
  }, 180_000);

  test("workcell run --ask bash on a terminal: asks, and the answer decides", async () => {
    const token = await suite.workcell().token("lin");
    const said: string[] = [];
    const yes = {
      isTTY: true,
      readLine: async () => {
        said.push("asked");
        return "y";
      },
    };
    const approved = await cliWith(token, yes, "run", "echo asked-and-ran", "--ask", "bash");
    expect(said).toEqual(["asked"]);
    expect(approved.stderr).toContain('approval needed: bash {"command":"echo asked-and-ran"}');
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain("asked-and-ran");

    const no = { isTTY: true, readLine: async () => "n" };
    const denied = await cliWith(token, no, "run", "echo never-ran", "--ask", "bash");
    expect(denied.code).toBe(1);
    expect(denied.stdout).not.toContain("never-ran");
    expect(denied.stderr).toContain("approval_denied");
  }, 180_000);

  test("console: the pending call with its arguments, a thread badge, Approve streams the rest", async () => {
    const token = await suite.workcell().token("grace");
    const client = new Workcell({ baseUrl: url(), token });
    const thread = await client.threads.create({ title: "needs a person" });
    const run = await client.runs.create(COMMAND, {
      threadId: thread.id,
      agent: { approvals: { tools: ["bash"] } },
    });
    await pendingOf(client, run.id);

    const page = await suite.freshPage();
    await signIn(page, url(), "grace");
    await visible(page.getByTestId("approval-badge"));
    expect(await text(page.getByTestId("approval-badge"))).toBe("1 to approve");
    await page.goto(`${url()}/threads/${thread.id}`);
    const card = page.getByTestId("approval");
    await visible(card);
    expect(await card.getAttribute("data-status")).toBe("pending");
    expect(JSON.parse((await text(page.getByTestId("approval-arguments"))) ?? "")).toEqual({
      command: COMMAND,
    });
    expect(await text(page.getByTestId("run-status"))).toBe("awaiting_approval");
    await screenshot(page, "36-approval-pending");

    await card.getByRole("button", { name: "Approve", exact: true }).click();
    await expect.poll(() => card.getAttribute("data-status"), WAIT).toBe("approved");
    await expect.poll(() => text(page.getByTestId("run-status")), WAIT).toBe("succeeded");
    await expect
      .poll(() => text(page.getByTestId("tool-output")), WAIT)
      .toContain("approved-effect");
    await expect.poll(() => count(page.getByTestId("approval-badge")), WAIT).toBe(0);
    await screenshot(page, "36-approval-approved");
  }, 180_000);
});
