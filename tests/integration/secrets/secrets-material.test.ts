import { X509Certificate } from "node:crypto";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import {
  loadOrCreateSecretsMaterial,
  MATERIAL_FILES,
} from "../../../agent-host/secrets/secrets-material.ts";

// A deployment's secrets material (decision 0133): made once (install, local mode's first
// start), kept after: the key and the CA's private key readable by their owner only.
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe("secrets material", () => {
  test("made once with owner-only key files, then read back unchanged; the CA signs leaves only", async () => {
    const dir = join(await mkdtemp(join(tmpdir(), "wc-secrets-material-")), "m");
    dirs.push(dir);
    const first = await loadOrCreateSecretsMaterial(dir);
    const again = await loadOrCreateSecretsMaterial(dir);
    expect(again).toEqual(first);
    expect(Buffer.from(first.keyBase64, "base64")).toHaveLength(32);
    for (const file of [MATERIAL_FILES.key, MATERIAL_FILES.caKey]) {
      expect((await stat(join(dir, file))).mode & 0o777).toBe(0o600);
    }
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    const ca = new X509Certificate(first.ca.certPem);
    expect(ca.ca).toBe(true);
    expect(
      ca.checkPrivateKey(
        await import("node:crypto").then((c) => c.createPrivateKey(first.ca.keyPem)),
      ),
    ).toBe(true);
  });
});
