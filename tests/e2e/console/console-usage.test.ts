import { isDeepStrictEqual } from "node:util";
import type { Page } from "playwright-core";
import { describe, expect, test } from "vitest";
import { UnauthenticatedError, type UsageData, Workcell } from "../../../sdk/src/index.ts";
import { formatBytes } from "../../../web/src/ui/format.ts";
import { screenshot } from "../../support/chromium.ts";
import { newThread, send, signIn, text, visible, WAIT } from "./console-page.ts";
import { consoleSuite } from "./console-suite.ts";

// The usage page in real Chromium against the real local Workcell: real runs write real
// bytes and hold real slots, and every figure the page shows is compared with what
// `GET /v1/usage` answers at the same moment, before and after an admin changes the limits.

const suite = consoleSuite();
const url = () => suite.workcell().url;
const clientOf = async (uid: string, admin = false) =>
  new Workcell({ baseUrl: url(), token: await suite.workcell().token(uid, { admin }) });

/** Each figure of the usage table as the page holds it (the `<data>` values), as the API's shape. */
async function shownUsage(page: Page): Promise<UsageData> {
  const figure = async (row: string, cell: "used" | "limit") => {
    const data = page.locator(`tr[data-usage="${row}"] td.${cell} data`);
    const value = Number(await data.getAttribute("value"));
    // What a person reads is the same figure: bytes as formatBytes shows them, counts in full.
    const shown = (await text(data)) ?? "";
    if (row === "workspace_bytes" || row === "egress_bytes_per_run")
      expect(shown).toBe(formatBytes(value));
    else expect(shown.replace(/\D/g, "")).toBe(String(value));
    return value;
  };
  return {
    workspace_bytes: await figure("workspace_bytes", "used"),
    workspace_inodes: await figure("workspace_inodes", "used"),
    running_runs: await figure("running_runs", "used"),
    queued_runs: await figure("queued_runs", "used"),
    limits: {
      workspace_bytes: await figure("workspace_bytes", "limit"),
      workspace_inodes: await figure("workspace_inodes", "limit"),
      max_concurrent_runs: await figure("running_runs", "limit"),
      requests_per_minute: await figure("requests_per_minute", "limit"),
      egress_bytes_per_run: await figure("egress_bytes_per_run", "limit"),
      max_checkpoints_per_thread: await figure("max_checkpoints_per_thread", "limit"),
    },
  };
}

/** Clicks Refresh and waits for the page to hold an answer fetched after the click. */
async function refresh(page: Page): Promise<void> {
  const updated = page.getByTestId("usage-updated");
  const before = await updated.getAttribute("data-updated-at");
  await page.getByRole("button", { name: "Refresh" }).click();
  await expect.poll(() => updated.getAttribute("data-updated-at"), WAIT).not.toBe(before);
}

/**
 * Waits until the API's answer satisfies `until` and the page, refreshed after that read,
 * shows exactly it; returns that answer. Both sides are re-read each round, since the bytes
 * are measured a few seconds late (decision 0049).
 */
async function pageMatchesApi(
  page: Page,
  api: Workcell,
  until: (u: UsageData) => boolean,
): Promise<UsageData> {
  let answered: UsageData | undefined;
  await expect
    .poll(async () => {
      answered = await api.usage();
      if (!until(answered)) return { waitingFor: "the API", answered };
      await refresh(page);
      const shown = await shownUsage(page);
      return isDeepStrictEqual(shown, answered) ? "same" : { shown, answered };
    }, WAIT)
    .toBe("same");
  if (answered === undefined) throw new Error("no usage read");
  return answered;
}

describe("web console: usage", () => {
  test("a user's usage page shows their workspace and runs as GET /v1/usage does, and the limits an admin sets, with what they mean", async () => {
    const uid = "ulla";
    const user = await clientOf(uid);
    const admin = await clientOf("root", true);
    const page = await suite.freshPage();
    await signIn(page, url(), uid);

    // Nothing stored yet: the empty state, and the API agrees.
    await page.getByRole("link", { name: "Usage", exact: true }).click();
    expect(page.url()).toBe(`${url()}/usage`);
    await visible(page.getByText("Nothing stored yet"));
    const empty = await pageMatchesApi(page, user, () => true);
    expect(empty).toMatchObject({ workspace_bytes: 0, workspace_inodes: 0, running_runs: 0 });

    // From here on a thread's title contains the nav link's name: its sidebar link must not
    // be taken for the nav link (an earlier test clicked the thread instead).
    await page.getByRole("link", { name: "Threads", exact: true }).click();
    await newThread(page, "usage of my workspace");
    const usageLink = () => page.getByRole("link", { name: "Usage", exact: true });
    // Back on the thread once its history shows (a message sent before would count wrong).
    const openThread = async (runs: number) => {
      await page.getByRole("link", { name: "usage of my workspace" }).click();
      await expect.poll(() => page.getByTestId("run").count(), WAIT).toBe(runs);
    };

    // A run writes 300 000 bytes into the workspace.
    const wrote = await send(page, "head -c 300000 /dev/zero > outputs/big.bin && echo wrote");
    await expect.poll(() => text(wrote.getByTestId("run-status")), WAIT).toBe("succeeded");
    await usageLink().click();
    // Root, Workdir, outputs/, big.bin: the run's directories show once the data plane walks
    // again (its figure may be up to 5 s old, decision 0049), so wait for them too.
    const written = await pageMatchesApi(
      page,
      user,
      (u) => u.workspace_bytes >= 300_000 && u.workspace_inodes >= 4,
    );
    expect(await page.getByText("Nothing stored yet").count()).toBe(0);

    // A long run holds a slot.
    await openThread(1);
    const sleeping = await send(page, "sleep 600");
    await expect.poll(() => text(sleeping.getByTestId("run-status")), WAIT).toBe("running");
    await usageLink().click();
    await pageMatchesApi(page, user, (u) => u.running_runs === 1);

    // The admin allows one run at once and fewer bytes than the workspace holds: the page
    // shows the new limits, the workspace over its limit and a second run waiting.
    await admin.admin.setLimits(uid, { max_concurrent_runs: 1, workspace_bytes: 100_000 });
    const queued = await user.runs.create("echo queued");
    const limited = await pageMatchesApi(
      page,
      user,
      (u) => u.queued_runs === 1 && u.limits.max_concurrent_runs === 1,
    );
    expect(limited).toMatchObject({
      running_runs: 1,
      limits: { max_concurrent_runs: 1, workspace_bytes: 100_000 },
    });
    expect(await page.locator('tr[data-usage="workspace_bytes"]').getAttribute("data-state")).toBe(
      "over",
    );
    expect(await text(page.getByRole("alert"))).toContain("over its limit");
    expect(await text(page.locator('tr[data-usage="workspace_bytes"] td.share'))).toBe(
      `${Math.floor((limited.workspace_bytes / 100_000) * 100)}%`,
    );
    expect(await text(page.locator(".usage-notes"))).toContain(
      "1 run waits: you can run 1 at once",
    );
    await screenshot(page, "14-usage-over-limit");

    // Cancelling the long run lets the waiting one start, which the quota refuses
    // (decision 0050); nothing runs or waits afterwards.
    await openThread(2);
    await sleeping.getByRole("button", { name: "Cancel" }).click();
    await expect.poll(() => text(sleeping.getByTestId("run-status")), WAIT).toBe("cancelled");
    const refused = await queued.wait({ signal: AbortSignal.timeout(WAIT.timeout) });
    expect(refused).toMatchObject({ status: "failed", error: { code: "quota_exceeded" } });
    await usageLink().click();
    const idle = await pageMatchesApi(page, user, (u) => u.running_runs + u.queued_runs === 0);
    expect(idle.workspace_bytes).toBe(written.workspace_bytes);

    // Another user's page (on a phone-width window) shows their own figures, not these.
    const other = await suite.freshPage({ width: 390, height: 800 });
    await signIn(other, url(), "otto");
    await other.getByRole("link", { name: "Usage", exact: true }).click();
    const theirs = await pageMatchesApi(other, await clientOf("otto"), () => true);
    expect(theirs).toMatchObject({ workspace_bytes: 0, running_runs: 0, queued_runs: 0 });
    expect(theirs.limits.max_concurrent_runs).not.toBe(1);
    await screenshot(other, "15-usage-narrow");
  }, 300_000);
});

// The Tokens page shares this file's Workcell and browser (one suite start, not two).
describe("tokens page", () => {
  test("create with scopes and expiry, shown once, works for the API, revoked: refused at once", async () => {
    const page = await suite.freshPage();
    await signIn(page, url(), "tina");
    await page.getByRole("link", { name: "Tokens" }).click();
    const form = page.getByRole("form", { name: "New token" });
    await form.getByLabel("Name").fill("ci job");
    // A non-admin is not offered the admin scope.
    expect(await form.getByRole("checkbox", { name: /admin:/ }).count()).toBe(0);
    await form.getByRole("checkbox", { name: /files:/ }).uncheck();
    await form.getByRole("combobox").selectOption("7");
    await form.getByRole("button", { name: "Create token" }).click();
    const shown = page.getByTestId("new-token-value");
    await visible(shown);
    const token = (await text(shown)) ?? "";
    expect(token).toMatch(/^wct_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    const row = page.locator("[data-testid=token-list] tr", { hasText: "ci job" });
    await expect.poll(() => text(row.getByTestId("token-state")), WAIT).toBe("active");
    expect(await text(row)).toContain("runs");
    expect(await text(row)).not.toContain("files");
    await screenshot(page, "15-token-created");

    const asToken = new Workcell({ baseUrl: url(), token });
    expect(Array.isArray((await asToken.threads.list()).items)).toBe(true);
    // Shown once: gone when dismissed, and after a reload.
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.getByTestId("new-token").count()).toBe(0);
    await page.reload();
    await visible(page.getByTestId("token-list"));
    expect(await page.content()).not.toContain(token.slice(-43));

    await page
      .locator("[data-testid=token-list] tr", { hasText: "ci job" })
      .getByRole("button", { name: "Revoke" })
      .click();
    await expect
      .poll(
        () =>
          text(
            page
              .locator("[data-testid=token-list] tr", { hasText: "ci job" })
              .getByTestId("token-state"),
          ),
        WAIT,
      )
      .toBe("revoked");
    await expect(asToken.threads.list()).rejects.toBeInstanceOf(UnauthenticatedError);
    await screenshot(page, "16-token-revoked");
  });
});
