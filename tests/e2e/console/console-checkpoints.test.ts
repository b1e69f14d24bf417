import { describe, expect, test } from "vitest";
import { Workcell } from "../../../sdk/src/index.ts";
import { screenshot } from "../../support/chromium.ts";
import { newThread, signIn, text, visible, WAIT } from "./console-page.ts";
import { consoleSuite } from "./console-suite.ts";

// "Undo this run" in real Chromium against the real local Workcell (its agent-host takes
// the before-run checkpoint in a real sandbox): the Workdir's files come back exactly, and
// the Checkpoints tab lists the checkpoint the run replaced.

const suite = consoleSuite();

describe("checkpoints in the console", () => {
  test("Undo this run gives the files back; the Checkpoints tab lists both states", async () => {
    const uid = "ursula";
    const page = await suite.freshPage();
    await signIn(page, suite.workcell().url, uid);
    const threadId = await newThread(page, "undo me");
    const client = new Workcell({
      baseUrl: suite.workcell().url,
      token: await suite.workcell().token(uid),
    });
    const setup = await client.runs.create("echo v1 > a.txt && echo keep > b.txt", { threadId });
    expect((await setup.wait()).status).toBe("succeeded");
    const run = await client.runs.create("echo v2 > a.txt && rm b.txt && echo new > c.txt", {
      threadId,
      agent: { checkpoint: true },
    });
    expect((await run.wait()).status).toBe("succeeded");
    const files = (await client.threads.get(threadId)).files;
    expect(await files.read("a.txt")).toBe("v2\n");

    await page.reload();
    const undo = page.getByTestId("undo-run");
    await visible(undo);
    // Only the run that had a checkpoint offers the undo.
    expect(await undo.count()).toBe(1);
    await screenshot(page, "checkpoints-undo-button");
    await undo.getByRole("button", { name: "Undo this run" }).click();
    await page.getByRole("button", { name: "Undo", exact: true }).click();
    await expect.poll(() => text(page.getByTestId("undo-done")), WAIT).toContain("Undone");
    expect(await files.read("a.txt")).toBe("v1\n");
    expect(await files.read("b.txt")).toBe("keep\n");
    expect((await files.list("/")).map((e) => e.name).sort()).toEqual([
      "a.txt",
      "b.txt",
      "outputs",
    ]);

    await page.getByRole("link", { name: "Checkpoints" }).click();
    await visible(page.getByTestId("checkpoint-list").locator("li"));
    await expect
      .poll(() => page.getByTestId("checkpoint-list").locator("li").count(), WAIT)
      .toBe(2);
    const listed = (await text(page.getByTestId("checkpoint-list"))) ?? "";
    expect(listed).toContain("before a run");
    expect(listed).toContain("replaced by a restore");
    await screenshot(page, "checkpoints-tab");
  });
});
