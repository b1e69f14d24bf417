import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import {
  type DeploymentCa,
  generateDeploymentCa,
} from "../../../../agent-host/secrets/deployment-ca.ts";
import { checkDeploymentCaPems } from "../../../../infra/sst/secrets-ca-settings.ts";

// The deploy's check of the CA an operator stored as SST secrets (decision 0164): what
// `npm run secrets:ca` makes passes; anything a node could not sign leaves with is refused
// before any node gets it, and no message holds a byte of the key.

let ca: DeploymentCa;
let other: DeploymentCa;
beforeAll(async () => {
  [ca, other] = await Promise.all([generateDeploymentCa(), generateDeploymentCa()]);
});

const keyBody = (pem: string) => pem.split("\n").slice(1, -2).join("");

function refusal(cert: string, key: string): string {
  try {
    checkDeploymentCaPems(cert, key);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("accepted");
}

describe("checkDeploymentCaPems", () => {
  test("accepts the pair secrets:ca makes, as the PEMs the nodes will read", () => {
    expect(checkDeploymentCaPems(`${ca.certPem}\n\n`, ca.keyPem)).toEqual({
      certPem: `${ca.certPem.trim()}\n`,
      keyPem: `${ca.keyPem.trim()}\n`,
    });
  });

  test("refuses another CA's key, a certificate that is not a CA, and text that is not PEM, saying which", () => {
    const dir = mkdtempSync(join(tmpdir(), "not-ca-"));
    execFileSync("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-subj",
      "/CN=leaf",
      "-addext",
      "basicConstraints=critical,CA:FALSE",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ]);
    const leafCert = readFileSync(join(dir, "cert.pem"), "utf8");
    const leafKey = readFileSync(join(dir, "key.pem"), "utf8");
    const cases: [string, string, RegExp][] = [
      [ca.certPem, other.keyPem, /SecretsCaKey is not the private key of SecretsCaCert/],
      [leafCert, leafKey, /SecretsCaCert is not a CA certificate/],
      ["not a certificate", ca.keyPem, /SecretsCaCert is not a PEM certificate/],
      [ca.certPem, "not a key", /SecretsCaKey is not a PEM private key/],
    ];
    for (const [cert, key, message] of cases) {
      const said = refusal(cert, key);
      expect(said).toMatch(message);
      for (const pem of [ca.keyPem, other.keyPem, leafKey]) {
        expect(said).not.toContain(keyBody(pem).slice(0, 24));
      }
    }
  });
});
