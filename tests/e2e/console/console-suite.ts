import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll } from "vitest";
import { launchChromium, screenshotIfFailed } from "../../support/chromium.ts";
import { buildConsole } from "../../support/console-build.ts";
import { requireDocker } from "../../support/docker.ts";
import { type LocalWorkcell, startLocalWorkcell } from "../../support/local-workcell-process.ts";

/** How long one Playwright step may wait (runs start sandboxes on a loaded machine). */
const STEP_TIMEOUT_MS = 60_000;

export type ConsoleSuite = {
  /** The local Workcell serving a fresh production build of web/ (after beforeAll). */
  workcell(): LocalWorkcell;
  /** A page in a context of its own (own storage: its own sign-in). */
  freshPage(viewport?: { width: number; height: number }): Promise<Page>;
};

/**
 * The hooks of a browser test file: builds web/, starts the real local Workcell serving it
 * (infra/local/main.ts) and Debian's Chromium; a failed test leaves screenshots of its
 * pages; everything is stopped after the file.
 */
export function consoleSuite(): ConsoleSuite {
  let web: Awaited<ReturnType<typeof buildConsole>> | undefined;
  let workcell: LocalWorkcell | undefined;
  let browser: Browser | undefined;
  const contexts: BrowserContext[] = [];
  const pages: Page[] = [];

  beforeAll(async () => {
    requireDocker();
    web = await buildConsole();
    workcell = await startLocalWorkcell({ CONSOLE_DIR: web.dir });
    browser = await launchChromium();
  }, 320_000);

  afterEach((ctx) => screenshotIfFailed(ctx, pages));

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await workcell?.stop();
    await web?.remove();
  });

  return {
    workcell() {
      if (workcell === undefined) throw new Error("the console suite has not started");
      return workcell;
    },
    async freshPage(viewport = { width: 1280, height: 800 }) {
      if (browser === undefined) throw new Error("the console suite has not started");
      const context = await browser.newContext({ viewport, acceptDownloads: true });
      contexts.push(context);
      const page = await context.newPage();
      pages.push(page);
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      return page;
    },
  };
}
