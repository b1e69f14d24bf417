import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's chromium (scripts/ensure-system.sh installs it); never a downloaded browser. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * The flags of docs/testing.md. playwright-core adds `--headless` for `headless: true` and
 * starts every launch with a fresh temporary `--user-data-dir` of its own (it refuses one
 * in `args`), so no profile state leaks between runs.
 */
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `${CHROMIUM_PATH} is missing: run bash scripts/ensure-system.sh (installs Debian's chromium).`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
}

/** Where tests leave screenshots of their final state (gitignored). */
export const SCREENSHOT_DIR = join(import.meta.dirname, "../../.test-results/console");

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}

/**
 * For an afterEach hook: when the test failed, a screenshot of each of its pages as they
 * were, to see why; then forgets the pages (the next test has its own).
 */
export async function screenshotIfFailed(
  ctx: { task: { name: string; result?: { state?: string } } },
  pages: Page[],
): Promise<void> {
  if (ctx.task.result?.state === "fail") {
    const name = ctx.task.name.replace(/[^a-z0-9]+/gi, "-").slice(0, 60);
    for (const [i, page] of pages.entries())
      await screenshot(page, `FAILED-${name}-${i}`).catch(() => {});
  }
  pages.length = 0;
}
