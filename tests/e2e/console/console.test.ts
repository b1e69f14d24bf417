import { readFile } from "node:fs/promises";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { launchChromium, screenshot } from "../../support/chromium.ts";
import { buildConsole } from "../../support/console-build.ts";
import { requireDocker } from "../../support/docker.ts";
import { type LocalWorkcell, startLocalWorkcell } from "../../support/local-workcell-process.ts";
import { checked, count, newThread, send, signIn, text, visible, WAIT } from "./console-page.ts";

// The web console in real Chromium against the real local Workcell (infra/local/main.ts
// serving a fresh production build of web/), as a person uses it.

const STEP_TIMEOUT_MS = 60_000;

let web: Awaited<ReturnType<typeof buildConsole>>;
let workcell: LocalWorkcell;
let browser: Browser;
const contexts: BrowserContext[] = [];

const pages: Page[] = [];

type Refusal = { error: { code: string }; token?: string };

/** A tab of the thread page (the thread's own title may contain the same word). */
function threadTab(page: Page, name: "Chat" | "Files" | "Attachments") {
  return page.getByRole("navigation", { name: "Thread" }).getByRole("link", { name });
}

async function freshPage(viewport = { width: 1280, height: 800 }): Promise<Page> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  contexts.push(context);
  const page = await context.newPage();
  pages.push(page);
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  return page;
}

beforeAll(async () => {
  requireDocker();
  web = await buildConsole();
  workcell = await startLocalWorkcell({ CONSOLE_DIR: web.dir });
  browser = await launchChromium();
}, 180_000);

// A failed test leaves a screenshot of each of its pages as they were, to see why.
afterEach(async (ctx) => {
  if (ctx.task.result?.state === "fail") {
    const name = ctx.task.name.replace(/[^a-z0-9]+/gi, "-").slice(0, 60);
    for (const [i, page] of pages.entries())
      await screenshot(page, `FAILED-${name}-${i}`).catch(() => {});
  }
  pages.length = 0;
});

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  await workcell?.stop();
  await web?.remove();
});

describe("the local server around the console", () => {
  test("serves the SPA with a fallback for deep links, without shadowing the API", async () => {
    const page = await fetch(
      `${workcell.url}/threads/00000000-0000-4000-8000-000000000000/files/a.txt`,
    );
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain('<div id="root">');
    const health = await fetch(`${workcell.url}/v1/healthz`);
    expect(health.headers.get("content-type")).toContain("application/json");
    const unauthenticated = await fetch(`${workcell.url}/v1/no-such-route`);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get("content-type")).toContain("application/json");
    expect((await fetch(`${workcell.url}/openapi.json`)).headers.get("content-type")).toContain(
      "application/json",
    );
    expect(await (await fetch(`${workcell.url}/config.json`)).json()).toEqual({
      mode: "local",
      api_base_url: null,
      dev_token_url: "/local/dev-token",
    });
  });

  test("a page of another site cannot mint a dev token; this machine's page can", async () => {
    const mint = (origin: string) =>
      fetch(`${workcell.url}/local/dev-token`, {
        method: "POST",
        headers: { "content-type": "application/json", origin },
        body: JSON.stringify({ uid: "eve" }),
      });
    const refused = await mint("https://evil.example");
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Refusal).token).toBeUndefined();
    const ok = await mint(workcell.url);
    expect(ok.status).toBe(200);
    const { token } = (await ok.json()) as { token: string };
    const threads = await fetch(`${workcell.url}/v1/threads`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(threads.status).toBe(200);
    const unknown = await fetch(`${workcell.url}/v1/no-such-route`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as Refusal).error.code).toBe("not_found");
  });

  test("GET /v1/threads/{id}/runs: the owner's history with inputs; another uid gets 404", async () => {
    const tokenOf = async (uid: string) => {
      const res = await fetch(`${workcell.url}/local/dev-token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ uid }),
      });
      return `Bearer ${((await res.json()) as { token: string }).token}`;
    };
    const owner = await tokenOf("ivan");
    const submitted = await fetch(`${workcell.url}/v1/runs`, {
      method: "POST",
      headers: { authorization: owner, "content-type": "application/json" },
      body: JSON.stringify({ input: "echo history" }),
    });
    expect(submitted.status).toBe(202);
    const { thread } = (await submitted.json()) as { thread: { thread_id: string } };
    const path = `${workcell.url}/v1/threads/${thread.thread_id}/runs`;
    const mine = await fetch(path, { headers: { authorization: owner } });
    expect(mine.status).toBe(200);
    const body = (await mine.json()) as { items: Array<{ input: string }>; truncated: boolean };
    expect(body.items.map((r) => r.input)).toEqual(["echo history"]);
    expect(body.truncated).toBe(false);
    const theirs = await fetch(path, { headers: { authorization: await tokenOf("judy") } });
    expect(theirs.status).toBe(404);
    expect(((await theirs.json()) as Refusal).error.code).toBe("not_found");
  });
});

describe("web console", () => {
  test("a running command's output appears live (tool.output) before the command ends", async () => {
    const page = await freshPage();
    await signIn(page, workcell.url, "olive");
    await newThread(page, "Live output");
    // The command prints, then waits far longer than any step here; the test sees its
    // first line while the call still reads "running…", then cancels it.
    const run = await send(page, "echo first-line; sleep 600; echo never");
    const tool = run.locator("details.tool");
    await expect.poll(() => text(run.getByTestId("tool-output")), WAIT).toBe("first-line");
    expect(await text(tool.locator("summary"))).toContain("running…");
    expect(await text(run.getByTestId("run-status"))).toBe("running");
    await run.getByRole("button", { name: "Cancel" }).click();
    await expect.poll(() => text(run.getByTestId("run-status")), WAIT).toBe("cancelled");
    expect(await text(run.getByTestId("tool-output"))).not.toContain("never");
  }, 120_000);

  test("sign in, run a command, see its streamed output and succeeded state, read the file it wrote", async () => {
    const page = await freshPage();
    await signIn(page, workcell.url, "alice");
    await newThread(page, "Hello thread");
    const run = await send(page, "echo hello > outputs/hello.txt && cat outputs/hello.txt");
    await expect.poll(() => text(run.getByTestId("run-status")), WAIT).toBe("succeeded");
    await expect.poll(() => text(run.getByTestId("tool-output")), WAIT).toBe("hello");
    await expect.poll(() => text(run.getByTestId("reply")), WAIT).toContain("hello");
    await run.getByRole("button", { name: "Changes" }).click();
    await expect
      .poll(() => text(run.getByTestId("run-changes")), WAIT)
      .toContain("outputs/hello.txt");

    await threadTab(page, "Files").click();
    await page.getByRole("link", { name: "outputs/" }).click();
    await page.getByRole("link", { name: "hello.txt" }).click();
    await expect.poll(() => text(page.getByTestId("file-content")), WAIT).toBe("hello");
    expect(page.url()).toMatch(/\/threads\/[0-9a-f-]+\/files\/outputs\/hello\.txt$/);
    await screenshot(page, "01-run-and-file");

    // The URL is shareable: opening it fresh shows the same file.
    await page.reload();
    await expect.poll(() => text(page.getByTestId("file-content")), WAIT).toBe("hello");
  });

  test("upload by the file input, see it listed, download the same bytes; a second upload is a 409 shown, not an overwrite", async () => {
    const page = await freshPage();
    await signIn(page, workcell.url, "bob");
    await newThread(page, "Uploads");
    await threadTab(page, "Files").click();
    await visible(page.getByText("This folder is empty."));
    const bytes = Buffer.from([0, 1, 2, 250, 251, 255, ...Buffer.from("data\n")]);
    await page
      .getByTestId("file-upload-input")
      .setInputFiles({ name: "blob.bin", mimeType: "application/octet-stream", buffer: bytes });
    await visible(page.getByRole("link", { name: "blob.bin" }));

    await page.getByRole("link", { name: "blob.bin" }).click();
    const downloading = page.waitForEvent("download");
    await page.getByRole("button", { name: "Download" }).click();
    const download = await downloading;
    expect(download.suggestedFilename()).toBe("blob.bin");
    expect(await readFile((await download.path()) as string)).toEqual(bytes);

    await page.getByTestId("file-upload-input").setInputFiles({
      name: "blob.bin",
      mimeType: "application/octet-stream",
      buffer: Buffer.from("other bytes"),
    });
    await expect.poll(() => text(page.getByTestId("upload-conflict")), WAIT).toContain("blob.bin");
    // Nothing was overwritten: a fresh download still has the first bytes.
    const again = page.waitForEvent("download");
    await page.getByRole("button", { name: "Download" }).click();
    expect(await readFile((await (await again).path()) as string)).toEqual(bytes);
    await screenshot(page, "02-upload-download-conflict");
  });

  test("an attachment with 'extract text' is uploaded with progress, confirmed, listed, and its Markdown is in uploads/attachments/", async () => {
    const page = await freshPage();
    await signIn(page, workcell.url, "carol");
    await newThread(page, "Attachments");
    await threadTab(page, "Attachments").click();
    await visible(page.getByText("No attachments on this thread."));
    await page.getByTestId("attachment-input").setInputFiles({
      name: "report.html",
      mimeType: "text/html",
      buffer: Buffer.from("<h1>Quarterly report</h1><p>Revenue <b>grew</b>.</p>"),
    });
    expect(await checked(page.getByRole("checkbox", { name: /Extract text/ }))).toBe(true);
    await page.getByRole("button", { name: "Attach", exact: true }).click();
    const listed = page.getByTestId("attachment-list");
    await visible(listed.getByRole("link", { name: "report.html" }));
    await listed.getByRole("link", { name: /^text: uploads\/attachments\// }).click();
    expect(page.url()).toContain("/files/uploads/attachments/");
    await expect
      .poll(() => text(page.getByTestId("file-content").getByRole("heading")), WAIT)
      .toBe("Quarterly report");
    await screenshot(page, "03-attachment-markdown");
  });

  test("cancel a `sleep 60` run and see it cancelled", async () => {
    const page = await freshPage();
    await signIn(page, workcell.url, "dave");
    await newThread(page, "Cancel me");
    const run = await send(page, "sleep 60");
    await expect.poll(() => text(run.getByTestId("run-status")), WAIT).toBe("running");
    await run.getByRole("button", { name: "Cancel" }).click();
    await expect.poll(() => text(run.getByTestId("run-status")), WAIT).toBe("cancelled");
    await expect.poll(() => count(run.getByRole("button", { name: "Cancel" })), WAIT).toBe(0);
    await screenshot(page, "04-cancelled");
  });

  test("reload mid-run: the stream continues to the end", async () => {
    const page = await freshPage();
    await signIn(page, workcell.url, "erin");
    await newThread(page, "Reload");
    const run = await send(page, "sleep 4 && echo after-reload");
    await expect.poll(() => text(run.getByTestId("run-status")), WAIT).toBe("running");
    await page.reload();
    const resumed = page.getByTestId("run").first();
    await expect
      .poll(() => text(page.getByTestId("user-message")), WAIT)
      .toBe("sleep 4 && echo after-reload");
    await expect.poll(() => text(resumed.getByTestId("run-status")), WAIT).toBe("running");
    await expect.poll(() => text(resumed.getByTestId("run-status")), WAIT).toBe("succeeded");
    await expect.poll(() => text(resumed.getByTestId("tool-output")), WAIT).toBe("after-reload");
    await screenshot(page, "05-reload-continued");
  });

  test("another uid's thread URL shows 'not found', not the thread", async () => {
    const owner = await freshPage();
    await signIn(owner, workcell.url, "frank");
    const threadId = await newThread(owner, "Frank's secret plans");
    await send(owner, "echo private");

    const intruder = await freshPage();
    await signIn(intruder, workcell.url, "mallory");
    await intruder.goto(`${workcell.url}/threads/${threadId}`);
    await visible(intruder.getByTestId("thread-not-found"));
    await expect.poll(() => count(intruder.getByText("Frank's secret plans")), WAIT).toBe(0);
    await intruder.goto(`${workcell.url}/threads/${threadId}/files/outputs`);
    await visible(intruder.getByTestId("thread-not-found"));
    await screenshot(intruder, "06-other-users-thread");
  });

  test("as admin, grant the builtin skill to a user and see it in that user's skill list", async () => {
    const user = await freshPage();
    await signIn(user, workcell.url, "grace");
    await user.getByRole("link", { name: "Skills" }).click();
    await visible(user.getByText("No skills yet."));

    const admin = await freshPage();
    await signIn(admin, workcell.url, "root", true);
    await admin.getByRole("link", { name: "Admin" }).click();
    await admin.getByRole("textbox", { name: "Skill" }).fill("hello");
    await admin.getByRole("textbox", { name: "User id" }).fill("grace");
    await admin.getByRole("button", { name: "Grant" }).click();
    await expect
      .poll(() => text(admin.getByTestId("grant-result")), WAIT)
      .toContain("Granted hello to grace");
    await expect.poll(() => text(admin.getByTestId("grants-hello")), WAIT).toBe("1");
    await screenshot(admin, "07a-admin-grant");

    await user.reload();
    await expect.poll(() => text(user.getByTestId("skill-list")), WAIT).toContain("hello");
    await screenshot(user, "07b-user-skills");
  });

  test("as admin, the nodes page shows the local agent-host active with its heartbeat", async () => {
    const admin = await freshPage();
    await signIn(admin, workcell.url, "root", true);
    await admin.getByRole("link", { name: "Nodes" }).click();
    const table = admin.getByTestId("node-table");
    await expect.poll(() => text(table.locator("tbody tr").first()), WAIT).toContain("active");
    expect(await text(table)).toContain("local-");
    await screenshot(admin, "09-admin-nodes");

    const user = await freshPage();
    await signIn(user, workcell.url, "kim");
    await user.goto(`${workcell.url}/admin/nodes`);
    await visible(user.getByText("This page is for administrators."));
  });

  test("works at mobile width: chat, thread list and files are usable", async () => {
    const page = await freshPage({ width: 390, height: 844 });
    await signIn(page, workcell.url, "heidi");
    await newThread(page, "Phone");
    const run = await send(page, "echo small screen");
    await expect.poll(() => text(run.getByTestId("run-status")), WAIT).toBe("succeeded");
    await expect.poll(() => text(run.getByTestId("tool-output")), WAIT).toBe("small screen");
    // Nothing wider than the window: no horizontal scrolling.
    const overflow = await page.evaluate(
      "document.documentElement.scrollWidth - document.documentElement.clientWidth",
    );
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, "08-mobile");
  });
});
