import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { build } from "vite";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { buildSdk, SDK_DIR } from "../../../sdk/scripts/build-package.ts";
import { NotFoundError, Workcell } from "../../../sdk/src/index.ts";
import { RUN_EVENT_TYPES } from "../../../shared/contracts/run-event.ts";
import { launchChromium, screenshot, screenshotIfFailed } from "../../support/chromium.ts";
import { type LocalWorkcell, startLocalWorkcell } from "../../support/local-workcell-process.ts";
import { type StaticSite, serveStaticSite } from "../../support/static-site.ts";
import type { PageGlobals } from "./browser-page/page.ts";

// The SDK in real Chromium on a page of ANOTHER origin than the API and the data plane (a
// static site on its own port), as a third-party web app uses Workcell: only the origin in
// WORKCELL_CORS_ORIGINS may call it; the same page served from any other origin can
// neither read an answer nor cause a change (its preflights get no CORS headers, so the
// browser never sends the requests).

let pageDir: string;
let sdkDist: string | undefined;
let allowed: StaticSite;
let refused: StaticSite;
let local: LocalWorkcell;
let browser: Browser;
const contexts: BrowserContext[] = [];
const pages: Page[] = [];

/** What the page's browser-side code sees (the page has no DOM types in this project). */
type BrowserGlobals = PageGlobals & {
  EventSource: new (
    url: string,
  ) => {
    readyState: number;
    addEventListener(
      type: string,
      listener: (e: { data: string; lastEventId: string }) => void,
    ): void;
    close(): void;
    onerror: (() => void) | null;
  };
  location: { origin: string };
};

type SeenEvent = { type: string; id: string; seq: number; status?: string };

async function openPage(site: StaticSite): Promise<Page> {
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  pages.push(page);
  page.setDefaultTimeout(60_000);
  await page.goto(`${site.origin}/`);
  await page.waitForFunction(() => "sdk" in globalThis);
  return page;
}

beforeAll(async () => {
  pageDir = await mkdtemp(join(tmpdir(), "workcell-sdk-page-"));
  // The built package, in a directory of this file's own (inside sdk/: its imports resolve).
  sdkDist = await buildSdk(await mkdtemp(join(SDK_DIR, ".build-")));
  await build({
    root: join(import.meta.dirname, "browser-page"),
    configFile: false,
    logLevel: "warn",
    resolve: { alias: { "@workcell/sdk": join(sdkDist, "src/index.js") } },
    build: { outDir: pageDir, emptyOutDir: true, sourcemap: false },
  });
  allowed = await serveStaticSite(pageDir);
  refused = await serveStaticSite(pageDir);
  local = await startLocalWorkcell({ WORKCELL_CORS_ORIGINS: allowed.origin });
  browser = await launchChromium();
}, 320_000);

afterEach((ctx) => screenshotIfFailed(ctx, pages));

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => {});
  await browser?.close();
  await local?.stop();
  await allowed?.close();
  await refused?.close();
  if (pageDir) await rm(pageDir, { recursive: true, force: true });
  if (sdkDist) await rm(sdkDist, { recursive: true, force: true });
});

describe("the SDK in Chromium, from another origin", () => {
  test("an allowed origin: thread, run, EventSource through a ticket, file through the data plane", async () => {
    const page = await openPage(allowed);
    const origins = new Set<string>();
    page.on("request", (request) => {
      origins.add(new URL(request.url()).origin);
    });
    const result = await page.evaluate(
      async ({ baseUrl, token, types }) => {
        const g = globalThis as unknown as BrowserGlobals;
        const workcell = new g.sdk.Workcell({ baseUrl, token });
        const thread = await workcell.threads.create({ title: "from another origin" });
        const run = await thread.run("echo hi > outputs/a.txt && echo done");
        const ticket = await run.eventsTicket();
        // The browser's own EventSource: no Authorization header, only the ticket's URL.
        const events = await new Promise<SeenEvent[]>((resolve, reject) => {
          const source = new g.EventSource(ticket.url);
          const seen: SeenEvent[] = [];
          for (const type of types) {
            source.addEventListener(type, (message) => {
              const event = JSON.parse(message.data) as { seq: number; data: { status?: string } };
              seen.push({ type, id: message.lastEventId, seq: event.seq, ...event.data });
              if (type === "run.completed") {
                source.close();
                resolve(seen);
              }
            });
          }
          source.onerror = () => {
            // 2 = CLOSED: the browser gave up (a refused CORS answer, a 4xx), no retry.
            if (source.readyState === 2)
              reject(new Error(`EventSource closed after ${seen.length}`));
          };
        });
        return {
          pageOrigin: g.location.origin,
          threadId: thread.id,
          ticketUrl: ticket.url,
          events,
          content: await thread.files.read("outputs/a.txt"),
          listed: (await thread.files.list("outputs")).map((e) => e.name),
        };
      },
      { baseUrl: local.url, token: await local.token("carol"), types: [...RUN_EVENT_TYPES] },
    );
    await screenshot(page, "sdk-browser-allowed-origin");

    expect(result.pageOrigin).toBe(allowed.origin);
    expect(result.ticketUrl.startsWith(`${local.url}/v1/runs/`)).toBe(true);
    expect(result.events[0]?.type).toBe("run.status");
    expect(result.events.at(-1)).toMatchObject({ type: "run.completed", status: "succeeded" });
    // Every event once, in order, its SSE id the seq.
    expect(result.events.map((e) => e.seq)).toEqual(result.events.map((_, i) => i + 1));
    expect(result.events.map((e) => e.id)).toEqual(result.events.map((e) => String(e.seq)));
    expect(result.content).toBe("hi\n");
    expect(result.listed).toEqual(["a.txt"]);

    // Once loaded, the page called exactly two other origins: the API's and the data plane's.
    const capability = await fetch(`${local.url}/v1/threads/${result.threadId}/files/access`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await local.token("carol")}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ ops: ["read"] }),
    });
    const dataPlane = new URL(((await capability.json()) as { base_url: string }).base_url).origin;
    expect(dataPlane).not.toBe(local.url);
    expect([...origins].sort()).toEqual([dataPlane, local.url].sort());
  });

  test("a refused origin reads nothing and changes nothing, on the API and the data plane", async () => {
    const token = await local.token("mallory");
    // What mallory has before the page tries anything, made outside the browser.
    const mallory = new Workcell({ baseUrl: local.url, token });
    const thread = await mallory.threads.create({ title: "before" });
    await thread.files.write("notes.txt", "original");
    const run = await thread.run("echo quiet");
    await run.wait();
    const ticket = await run.eventsTicket();
    const access = await fetch(`${local.url}/v1/threads/${thread.id}/files/access`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ ops: ["read", "write", "delete"] }),
    });
    const capability = (await access.json()) as { base_url: string; token: string };

    const page = await openPage(refused);
    const attempts = await page.evaluate(
      async ({ baseUrl, token, threadId, ticketUrl, capability }) => {
        const g = globalThis as unknown as BrowserGlobals;
        const workcell = new g.sdk.Workcell({ baseUrl, token });
        const outcome = (p: Promise<unknown>) =>
          p.then(
            () => "answered",
            (e: unknown) => (e instanceof Error ? e.name : String(e)),
          );
        const dp = (method: string, path: string, body?: string) =>
          outcome(
            fetch(`${capability.base_url}/dp/v1/files${path}`, {
              method,
              headers: { authorization: `Bearer ${capability.token}` },
              ...(body === undefined ? {} : { body }),
            }),
          );
        const stream = new Promise<string>((resolve) => {
          const source = new g.EventSource(ticketUrl);
          source.addEventListener("run.completed", () => {
            source.close();
            resolve("read an event");
          });
          source.onerror = () => {
            source.close();
            resolve("error");
          };
        });
        return {
          health: await outcome(workcell.health()),
          createThread: await outcome(workcell.threads.create({ title: "from a refused origin" })),
          createRun: await outcome(workcell.runs.create("echo pwned > outputs/p.txt")),
          deleteThread: await outcome(workcell.threads.delete(threadId)),
          writeFile: await dp("PUT", "/content?path=%2Fpwned.txt", "pwned"),
          deleteFile: await dp("DELETE", "?path=%2Fnotes.txt"),
          readFile: await dp("GET", "/content?path=%2Fnotes.txt"),
          stream: await stream,
        };
      },
      { baseUrl: local.url, token, threadId: thread.id, ticketUrl: ticket.url, capability },
    );
    await screenshot(page, "sdk-browser-refused-origin");

    // Every call failed in the browser without an answer the page could read.
    expect(attempts).toEqual({
      health: "WorkcellConnectionError",
      createThread: "WorkcellConnectionError",
      createRun: "WorkcellConnectionError",
      deleteThread: "WorkcellConnectionError",
      writeFile: "TypeError",
      deleteFile: "TypeError",
      readFile: "TypeError",
      stream: "error",
    });
    // And nothing happened: the same one thread, its one run, the file untouched.
    const threads = await mallory.threads.list();
    expect(threads.items.map((t) => t.id)).toEqual([thread.id]);
    const history = await mallory.api.GET("/v1/threads/{thread_id}/runs", {
      params: { path: { thread_id: thread.id } },
    });
    expect(history.data?.items.map((r) => r.run_id)).toEqual([run.id]);
    const again = await mallory.threads.get(thread.id);
    expect(await again.files.read("notes.txt")).toBe("original");
    await expect(again.files.read("pwned.txt")).rejects.toBeInstanceOf(NotFoundError);
  });
});
