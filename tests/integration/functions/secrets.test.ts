import { randomBytes } from "node:crypto";
import { describe, expect, test } from "vitest";
import { createEnvKeyWrapper, openSecret } from "../../../shared/secrets/secret-envelope.ts";
import { captureLogs } from "../../support/log-capture.ts";
import { BOB, type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// The secrets store (docs/api.md "Secrets", decision 0131) through the whole app on real
// PostgreSQL: write-only values sealed at rest, per-user names, another user's secret
// answered like a missing one, and the value in no answer, log line, error or column.

const logs = captureLogs("debug");
const h = functionsHarnessForFile({ logger: logs.logger });

type Secret = { name: string; hosts: string[]; header: string; template: string };
const value = () => `ghp_${randomBytes(18).toString("hex")}`;
/** Every value stored here: none may appear anywhere but in its PUT body. */
const stored: string[] = [];

async function put(uid: string, name: string, body: object) {
  const v = (body as { value?: string }).value;
  if (v !== undefined) stored.push(v);
  return h.call("PUT", `/v1/secrets/${name}`, { uid, body });
}

async function tableText(): Promise<string> {
  return JSON.stringify(await h.database.sql`select * from user_secrets`);
}

function expectNoValueAnywhere(text: string) {
  for (const v of stored) expect(text).not.toContain(v);
}

describe("secrets", () => {
  test("PUT stores it bound to hosts with defaults; GET lists names and bindings, never values; replacing keeps one row", async () => {
    const first = value();
    const res = await put("alice", "GITHUB_TOKEN", { value: first, hosts: ["API.github.com"] });
    expect(res.status).toBe(200);
    const secret = await jsonOf<Secret & Record<string, unknown>>(res);
    expect(secret).toMatchObject({
      name: "GITHUB_TOKEN",
      hosts: ["api.github.com"],
      header: "Authorization",
      template: "Bearer {value}",
    });
    expect(Object.keys(secret).sort()).toEqual(
      ["created_at", "header", "hosts", "name", "template", "updated_at"].sort(),
    );
    const second = value();
    const replaced = await put("alice", "GITHUB_TOKEN", {
      value: second,
      hosts: ["*.github.com", "git.example.com:8443"],
      header: "X-Token",
      template: "{value}",
    });
    expect(replaced.status).toBe(200);
    const list = await jsonOf<{ items: Secret[] }>(
      await h.call("GET", "/v1/secrets", { uid: "alice" }),
    );
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({
      name: "GITHUB_TOKEN",
      hosts: ["*.github.com", "git.example.com:8443"],
      header: "X-Token",
      template: "{value}",
    });
    // Sealed at rest: the row holds neither value, and it opens only as alice's GITHUB_TOKEN.
    const text = await tableText();
    expectNoValueAnywhere(text);
    expectNoValueAnywhere(JSON.stringify(list));
    expectNoValueAnywhere(logs.raw.join("\n"));
  });

  test("the sealed row does not open under another user's or name's context, nor with another key", async () => {
    const v = value();
    expect(
      (await put("carol", "NPM_TOKEN", { value: v, hosts: ["registry.npmjs.org"] })).status,
    ).toBe(200);
    const [row] = await h.database.sql<
      { key_id: string; wrapped_key: string; ciphertext: string }[]
    >`
      select key_id, wrapped_key, ciphertext from user_secrets where uid = 'carol'`;
    if (row === undefined) throw new Error("no row");
    const sealed = { keyId: row.key_id, wrappedKey: row.wrapped_key, ciphertext: row.ciphertext };
    const other = createEnvKeyWrapper(randomBytes(32));
    await expect(openSecret(other, sealed, "carol/NPM_TOKEN")).rejects.toThrow();
    await expect(
      openSecret({ ...other, keyId: row.key_id }, sealed, "carol/NPM_TOKEN"),
    ).rejects.toThrow();
  });

  test("another user's secret is 404 to delete and invisible to list; nothing of alice's changes", async () => {
    expect(
      (await put("alice", "SHARED_NAME", { value: value(), hosts: ["a.example.com"] })).status,
    ).toBe(200);
    const before = await tableText();
    const del = await h.call("DELETE", "/v1/secrets/SHARED_NAME", { uid: BOB });
    expect(del.status).toBe(404);
    expect((await jsonOf<ErrorJson>(del)).error.code).toBe("not_found");
    const bobs = await jsonOf<{ items: Secret[] }>(
      await h.call("GET", "/v1/secrets", { uid: BOB }),
    );
    expect(bobs.items).toEqual([]);
    expect(await tableText()).toBe(before);
    // Bob storing the same name makes his own; alice's row is untouched.
    expect(
      (await put(BOB, "SHARED_NAME", { value: value(), hosts: ["b.example.com"] })).status,
    ).toBe(200);
    const [alices] = await h.database.sql<{ hosts: string[] }[]>`
      select hosts from user_secrets where uid = 'alice' and name = 'SHARED_NAME'`;
    expect(alices?.hosts).toEqual(["a.example.com"]);
    expect((await h.call("DELETE", "/v1/secrets/SHARED_NAME", { uid: "alice" })).status).toBe(204);
    expect((await h.call("DELETE", "/v1/secrets/SHARED_NAME", { uid: "alice" })).status).toBe(404);
  });

  test("bad input is refused with nothing stored and no value in the error or the logs", async () => {
    const before = await tableText();
    const bad: [string, object, number][] = [
      ["lower_case", { value: value(), hosts: ["a.example.com"] }, 404],
      // Names a sandbox's tools need are not secrets' (a malformed path name is 404).
      ["PATH", { value: value(), hosts: ["a.example.com"] }, 404],
      ["HTTPS_PROXY", { value: value(), hosts: ["a.example.com"] }, 404],
      ["WORKCELL_EGRESS_SOCKET", { value: value(), hosts: ["a.example.com"] }, 404],
      ["IP_HOST", { value: value(), hosts: ["10.0.0.1"] }, 400],
      ["NO_HOSTS", { value: value(), hosts: [] }, 400],
      ["CRLF", { value: `${value()}\r\nX-Evil: 1`, hosts: ["a.example.com"] }, 400],
      ["TEMPLATE", { value: value(), hosts: ["a.example.com"], template: "Bearer" }, 400],
      ["HEADER", { value: value(), hosts: ["a.example.com"], header: "Bad Header" }, 400],
      ["EXTRA", { value: value(), hosts: ["a.example.com"], echo: true }, 400],
    ];
    for (const [name, body, status] of bad) {
      const res = await put("dave", name, body);
      expect(res.status, name).toBe(status);
      expectNoValueAnywhere(await res.text());
    }
    expect(await tableText()).toBe(before);
    expectNoValueAnywhere(logs.raw.join("\n"));
  });
});
