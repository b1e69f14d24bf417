import { mkdirSync, writeFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { expectCode, RESOLVER_KINDS, setupWorkspace, type WorkspaceEnv } from "./harness.ts";

// Reading through the workspace layer: whole files within a limit, byte ranges, stat.
describe.each(RESOLVER_KINDS)("reads (%s resolver)", (kind) => {
  let env: WorkspaceEnv;
  beforeEach(async () => {
    env = await setupWorkspace(kind);
    writeFileSync(env.at("data.bin"), Buffer.from("0123456789"));
    mkdirSync(env.at("dir"));
  });
  afterEach(() => env.finish());

  it("reads whole files within the limit", async () => {
    expect((await env.fs.readFile("data.bin")).toString()).toBe("0123456789");
    await expectCode(() => env.fs.readFile("data.bin", { maxBytes: 9 }), "payload_too_large");
  });

  it("streams a byte range, clamped to the size seen at open", async () => {
    const reader = await env.fs.openRead("data.bin");
    expect(reader.info.size).toBe(10);
    const body = await new Response(reader.stream({ range: { start: 2, end: 100 } })).text();
    expect(body).toBe("23456789");
    const again = await env.fs.openRead("data.bin");
    expect(await new Response(again.stream({ range: { start: 3, end: 4 } })).text()).toBe("34");
  });

  it("a directory is invalid, a missing file not_found, the root invalid", async () => {
    await expectCode(() => env.fs.readFile("dir"), "invalid_request", "is_a_directory");
    await expectCode(() => env.fs.readFile("nope"), "not_found");
    await expectCode(() => env.fs.readFile("data.bin/x"), "not_found");
    await expectCode(() => env.fs.readFile(""), "invalid_request");
  });

  it("stat reports files and directories", async () => {
    expect(await env.fs.stat("data.bin")).toMatchObject({ type: "file", size: 10 });
    expect(await env.fs.stat("dir")).toMatchObject({ type: "dir", name: "dir" });
    expect(await env.fs.stat("")).toMatchObject({ type: "dir" });
  });
});
