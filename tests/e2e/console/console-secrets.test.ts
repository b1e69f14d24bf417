import { describe, expect, test } from "vitest";
import { Workcell } from "../../../sdk/src/index.ts";
import { screenshot } from "../../support/chromium.ts";
import { signIn, text, visible, WAIT } from "./console-page.ts";
import { consoleSuite } from "./console-suite.ts";

// The Secrets page in real Chromium against the real local Workcell: add, replace, delete;
// the value field is write-only (a password input, cleared once sent) and no page, answer
// or log line ever shows a value back.

const suite = consoleSuite();
const url = () => suite.workcell().url;

describe("secrets page", () => {
  test("add, replace and delete a secret; the value is never shown back", async () => {
    const page = await suite.freshPage();
    await signIn(page, url(), "sara");
    await page.getByRole("link", { name: "Secrets" }).click();
    const form = page.getByRole("form", { name: "Secret" });
    const first = `ghp_console_${Date.now().toString(36)}_first`;
    const second = `ghp_console_${Date.now().toString(36)}_second`;
    await form.getByLabel("Name").fill("github_token");
    expect(await form.getByLabel("Value").getAttribute("type")).toBe("password");
    await form.getByLabel("Value").fill(first);
    await form.getByLabel("Hosts").fill("api.github.com, github.com");
    await form.getByRole("button", { name: "Add secret" }).click();
    const row = page.locator("[data-testid=secret-list] tr[data-secret=GITHUB_TOKEN]");
    await visible(row);
    expect(await text(row)).toContain("api.github.com, github.com");
    expect(await text(row)).toContain("Authorization: Bearer {value}");
    // The form starts over: nothing of the value (or the secret) is left in it.
    expect(await form.getByLabel("Value").inputValue()).toBe("");
    expect(await form.getByLabel("Name").inputValue()).toBe("");
    await screenshot(page, "35-secret-added");

    const sdk = new Workcell({ baseUrl: url(), token: await suite.workcell().token("sara") });
    const before = (await sdk.secrets.list())[0]?.updated_at;
    await row.getByRole("button", { name: "Replace" }).click();
    expect(await form.getByLabel("Name").inputValue()).toBe("GITHUB_TOKEN");
    await form.getByLabel("Value").fill(second);
    await form.getByRole("button", { name: "Replace GITHUB_TOKEN" }).click();
    await expect.poll(async () => (await sdk.secrets.list())[0]?.updated_at, WAIT).not.toBe(before);
    await page.reload();
    await visible(page.getByTestId("secret-list"));
    const html = await page.content();
    for (const value of [first, second]) {
      expect(html).not.toContain(value);
      expect(suite.workcell().output()).not.toContain(value);
    }
    await screenshot(page, "36-secret-replaced");

    await page
      .locator("[data-testid=secret-list] tr[data-secret=GITHUB_TOKEN]")
      .getByRole("button", { name: "Delete" })
      .click();
    await visible(page.getByText("No secrets yet."));
    expect(await sdk.secrets.list()).toEqual([]);
  });
});
