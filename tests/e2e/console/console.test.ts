import { readFile } from "node:fs/promises";
import type { Page } from "playwright-core";
import { describe, expect, test } from "vitest";
import { Workcell } from "../../../sdk/src/index.ts";
import { screenshot } from "../../support/chromium.ts";
import {
  checked,
  count,
  dropFiles,
  newThread,
  send,
  signIn,
  text,
  visible,
  WAIT,
} from "./console-page.ts";
import { consoleSuite } from "./console-suite.ts";

// The web console in real Chromium against the real local Workcell (infra/local/main.ts
// serving a fresh production build of web/), as a person uses it. The operator pages are
// in console-admin.test.ts.

const suite = consoleSuite();
const freshPage = suite.freshPage;
const url = () => suite.workcell().url;

type Refusal = { error: { code: string }; token?: string };

/** A tab of the thread page (the thread's own title may contain the same word). */
function threadTab(page: Page, name: "Chat" | "Files" | "Attachments") {
  return page.getByRole("navigation", { name: "Thread" }).getByRole("link", { name });
}

describe("the local server around the console", () => {
  test("serves the SPA with a fallback for deep links, without shadowing the API", async () => {
    const page = await fetch(`${url()}/threads/00000000-0000-4000-8000-000000000000/files/a.txt`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain('<div id="root">');
    const health = await fetch(`${url()}/v1/healthz`);
    expect(health.headers.get("content-type")).toContain("application/json");
    const unauthenticated = await fetch(`${url()}/v1/no-such-route`);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get("content-type")).toContain("application/json");
    expect((await fetch(`${url()}/openapi.json`)).headers.get("content-type")).toContain(
      "application/json",
    );
    expect(await (await fetch(`${url()}/config.json`)).json()).toEqual({
      mode: "local",
      api_base_url: null,
      dev_token_url: "/local/dev-token",
    });
  });

  test("a page of another site cannot mint a dev token; this machine's page can", async () => {
    const mint = (origin: string) =>
      fetch(`${url()}/local/dev-token`, {
        method: "POST",
        headers: { "content-type": "application/json", origin },
        body: JSON.stringify({ uid: "eve" }),
      });
    const refused = await mint("https://evil.example");
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Refusal).token).toBeUndefined();
    const ok = await mint(url());
    expect(ok.status).toBe(200);
    const { token } = (await ok.json()) as { token: string };
    const threads = await fetch(`${url()}/v1/threads`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(threads.status).toBe(200);
    const unknown = await fetch(`${url()}/v1/no-such-route`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as Refusal).error.code).toBe("not_found");
  });

  test("GET /v1/threads/{id}/runs: the owner's history with inputs; another uid gets 404", async () => {
    const tokenOf = async (uid: string) => {
      const res = await fetch(`${url()}/local/dev-token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ uid }),
      });
      return `Bearer ${((await res.json()) as { token: string }).token}`;
    };
    const owner = await tokenOf("ivan");
    const submitted = await fetch(`${url()}/v1/runs`, {
      method: "POST",
      headers: { authorization: owner, "content-type": "application/json" },
      body: JSON.stringify({ input: "echo history" }),
    });
    expect(submitted.status).toBe(202);
    const { thread } = (await submitted.json()) as { thread: { thread_id: string } };
    const path = `${url()}/v1/threads/${thread.thread_id}/runs`;
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
    await signIn(page, url(), "olive");
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
    // The lines it printed stay, and the call says how it ended.
    await expect.poll(() => text(tool.getByTestId("tool-state")), WAIT).toBe("cancelled");
    expect(await text(run.getByTestId("tool-output"))).toBe("first-line");
    await screenshot(page, "12-cancelled-keeps-lines");
  }, 120_000);

  test("a command exiting 3 reads 'command failed (exit 3)', never a green succeeded", async () => {
    const page = await freshPage();
    await signIn(page, url(), "fiona");
    await newThread(page, "Exit three");
    const run = await send(page, "echo partial; exit 3");
    await expect
      .poll(() => text(run.getByTestId("run-status")), WAIT)
      .toBe("command failed (exit 3)");
    expect(await run.getByTestId("run-status").getAttribute("class")).toContain("badge-failed");
    expect(await text(run.getByTestId("tool-state"))).toBe("failed (exit 3)");
    expect(await count(run.getByTestId("reply"))).toBe(0);
    await screenshot(page, "13-command-failed");
  });

  test("a 20,000-line output stays a bounded block with a download of the whole", async () => {
    const page = await freshPage();
    await signIn(page, url(), "gus");
    await newThread(page, "Long output");
    const run = await send(page, "seq 1 20000");
    await expect.poll(() => text(run.getByTestId("run-status")), WAIT).toBe("succeeded");
    await expect.poll(() => count(run.getByTestId("output-truncated")), WAIT).toBe(1);
    const block = await run.getByTestId("tool-output").boundingBox();
    expect(block?.height ?? Infinity).toBeLessThanOrEqual(400);
    // The run stays short: no copy of the output (the reply) outside the bounded block.
    const runBox = await run.boundingBox();
    expect(runBox?.height ?? Infinity).toBeLessThan(600);
    expect(await text(run.getByTestId("tool-output"))).toMatch(/\n20000$/);
    const download = page.waitForEvent("download");
    await run.getByRole("link", { name: "Download the full output" }).click();
    const saved = await (await download).path();
    const whole = await readFile(saved, "utf8");
    expect(whole.split("\n").filter(Boolean)).toHaveLength(20_000);
    await screenshot(page, "14-long-output");
  });

  test("sign in, run a command, see its streamed output and succeeded state, read the file it wrote", async () => {
    const page = await freshPage();
    await signIn(page, url(), "alice");
    await newThread(page, "Hello thread");
    const run = await send(page, "echo hello > outputs/hello.txt && cat outputs/hello.txt");
    await expect.poll(() => text(run.getByTestId("run-status")), WAIT).toBe("succeeded");
    await expect.poll(() => text(run.getByTestId("tool-output")), WAIT).toBe("hello");
    // The shell model's reply is the command's result: shown once, in the tool's block.
    expect(await count(run.getByTestId("reply"))).toBe(0);
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
    await signIn(page, url(), "bob");
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

  test("new folder: created where the browser is; an existing name is a 409 shown in the dialog, and closing it clears the error", async () => {
    const page = await freshPage();
    await signIn(page, url(), "nora");
    const threadId = await newThread(page, "Folders");
    await threadTab(page, "Files").click();
    await visible(page.getByText("This folder is empty."));
    const dialog = page.getByRole("dialog");
    const create = async (name: string) => {
      await page.getByRole("button", { name: "New folder" }).click();
      await dialog.getByLabel("Name").fill(name);
      await dialog.getByRole("button", { name: "Create" }).click();
    };

    await create("notes");
    await visible(page.getByRole("link", { name: "notes/" }));
    await expect.poll(() => count(dialog), WAIT).toBe(0);

    await create("notes");
    await expect.poll(() => text(dialog.locator(".error-code")), WAIT).toBe("conflict");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await expect.poll(() => count(dialog), WAIT).toBe(0);
    await page.getByRole("button", { name: "New folder" }).click();
    await visible(dialog.getByLabel("Name"));
    expect(await count(dialog.getByRole("alert"))).toBe(0);

    // One folder, as the API sees it.
    const workcell = new Workcell({ baseUrl: url(), token: await suite.workcell().token("nora") });
    const thread = await workcell.threads.get(threadId);
    expect((await thread.files.list("/")).map((e) => [e.name, e.type])).toEqual([["notes", "dir"]]);
  });

  test("an attachment with 'extract text' is uploaded with progress, confirmed, listed, and its Markdown is in uploads/attachments/", async () => {
    const page = await freshPage();
    await signIn(page, url(), "carol");
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

  test("drag and drop: files dropped on the attachments box are attached and confirmed into the Workdir", async () => {
    const page = await freshPage();
    await signIn(page, url(), "olga");
    const threadId = await newThread(page, "Dropped attachments");
    await threadTab(page, "Attachments").click();
    await visible(page.getByText("No attachments on this thread."));
    const box = page.getByTestId("attachment-drop");
    await dropFiles(page, box, [
      { name: "minutes.txt", type: "text/plain", text: "Minutes of the meeting\n" },
      { name: "notes.md", type: "text/markdown", text: "# Notes\n" },
    ]);
    await expect
      .poll(() => text(page.getByTestId("picked-files")), WAIT)
      .toMatch(/minutes\.txt.*notes\.md/);
    // Not sent until the person confirms: nothing is attached yet.
    expect(await count(page.getByTestId("attachment-list").getByRole("listitem"))).toBe(0);
    await page.getByRole("checkbox", { name: /Extract text/ }).click();
    await page.getByRole("button", { name: "Attach", exact: true }).click();
    const listed = page.getByTestId("attachment-list");
    await visible(listed.getByRole("link", { name: "minutes.txt" }));
    await visible(listed.getByRole("link", { name: "notes.md" }));
    await screenshot(page, "10-attachments-dropped");

    // Confirmed into the Workdir, byte for byte, as the API and the data plane see it.
    const token = await suite.workcell().token("olga");
    const workcell = new Workcell({ baseUrl: url(), token });
    const attachments = await workcell.attachments.list(threadId);
    expect(attachments.map((a) => [a.file_name, a.status]).sort()).toEqual([
      ["minutes.txt", "uploaded"],
      ["notes.md", "uploaded"],
    ]);
    const thread = await workcell.threads.get(threadId);
    expect(await thread.files.read("uploads/minutes.txt")).toBe("Minutes of the meeting\n");
    expect(await thread.files.read("uploads/notes.md")).toBe("# Notes\n");
  });

  test("drag and drop: a file dropped on the file browser lands in that folder; a second drop of the name is a 409 shown", async () => {
    const page = await freshPage();
    await signIn(page, url(), "pablo");
    const threadId = await newThread(page, "Dropped files");
    await threadTab(page, "Files").click();
    await visible(page.getByText("This folder is empty."));
    const browser = page.getByTestId("file-browser");
    await dropFiles(page, browser, [{ name: "dropped.txt", type: "text/plain", text: "first\n" }]);
    await visible(page.getByRole("link", { name: "dropped.txt" }));
    await dropFiles(page, browser, [{ name: "dropped.txt", type: "text/plain", text: "second\n" }]);
    await expect
      .poll(() => text(page.getByTestId("upload-conflict")), WAIT)
      .toContain("dropped.txt");
    await screenshot(page, "11-files-dropped");
    const workcell = new Workcell({ baseUrl: url(), token: await suite.workcell().token("pablo") });
    const thread = await workcell.threads.get(threadId);
    expect(await thread.files.read("dropped.txt")).toBe("first\n");
  });

  test("cancel a `sleep 60` run and see it cancelled", async () => {
    const page = await freshPage();
    await signIn(page, url(), "dave");
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
    await signIn(page, url(), "erin");
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
    await signIn(owner, url(), "frank");
    const threadId = await newThread(owner, "Frank's secret plans");
    await send(owner, "echo private");

    const intruder = await freshPage();
    await signIn(intruder, url(), "mallory");
    await intruder.goto(`${url()}/threads/${threadId}`);
    await visible(intruder.getByTestId("thread-not-found"));
    await expect.poll(() => count(intruder.getByText("Frank's secret plans")), WAIT).toBe(0);
    await intruder.goto(`${url()}/threads/${threadId}/files/outputs`);
    await visible(intruder.getByTestId("thread-not-found"));
    await screenshot(intruder, "06-other-users-thread");
  });

  test("works at mobile width: chat, thread list and files are usable", async () => {
    const page = await freshPage({ width: 390, height: 844 });
    await signIn(page, url(), "heidi");
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
