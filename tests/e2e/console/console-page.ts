import type { Locator, Page } from "playwright-core";
import { expect } from "vitest";

// How a person drives the console, as reusable steps of the browser tests. Waiting is on
// conditions (an element, a text), never on time.

/** The element's visible text once it exists (Playwright waits for it). */
/** How long a step may take to show its result (runs start sandboxes). */
export const WAIT = { timeout: 60_000, interval: 200 };

export const text = async (locator: Locator) => (await locator.textContent())?.trim();
export const count = (locator: Locator) => locator.count();
export const checked = (locator: Locator) => locator.isChecked();
export const visible = (locator: Locator) => locator.first().waitFor({ state: "visible" });

export async function signIn(page: Page, url: string, uid: string, admin = false): Promise<void> {
  await page.goto(`${url}/`);
  await page.getByLabel("User id").fill(uid);
  if (admin) await page.getByRole("checkbox", { name: "Administrator" }).click();
  await page.getByRole("button", { name: `Continue as ${uid}` }).click();
  await expect.poll(() => text(page.getByTestId("whoami")), WAIT).toContain(uid);
}

export async function newThread(page: Page, title: string): Promise<string> {
  await page.getByRole("button", { name: "New thread" }).click();
  await page.getByLabel("Title (optional)").fill(title);
  await page.getByRole("button", { name: "Create" }).click();
  await visible(page.getByRole("heading", { name: title }));
  const id = /\/threads\/([0-9a-f-]{36})/.exec(page.url())?.[1];
  if (id === undefined) throw new Error(`not on a thread page: ${page.url()}`);
  return id;
}

/** Sends a message and returns the run element it produced (the last one). */
export async function send(page: Page, message: string): Promise<Locator> {
  const before = await page.getByTestId("run").count();
  await page.getByLabel("Message").fill(message);
  await page.getByLabel("Message").press("Enter");
  await expect.poll(() => count(page.getByTestId("run")), WAIT).toBe(before + 1);
  return page.getByTestId("run").nth(before);
}

/**
 * Drops files on `target` as a person dragging them from the desktop does: Chromium's own
 * DataTransfer holding real File objects, delivered by dragenter, dragover and drop events
 * (Playwright dispatches them as trusted-looking DragEvents with that DataTransfer).
 */
export async function dropFiles(
  page: Page,
  target: Locator,
  files: readonly { name: string; type: string; text: string }[],
): Promise<void> {
  const dataTransfer = await page.evaluateHandle((list) => {
    const g = globalThis as unknown as {
      DataTransfer: new () => { items: { add(file: unknown): void } };
      File: new (parts: string[], name: string, options: { type: string }) => unknown;
    };
    const transfer = new g.DataTransfer();
    for (const f of list) transfer.items.add(new g.File([f.text], f.name, { type: f.type }));
    return transfer;
  }, files);
  for (const type of ["dragenter", "dragover", "drop"]) {
    await target.dispatchEvent(type, { dataTransfer });
  }
  await dataTransfer.dispose();
}
