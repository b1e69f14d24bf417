import "reflect-metadata";
import { createPrivateKey, randomBytes, webcrypto } from "node:crypto";
import { readFile } from "node:fs/promises";
import * as x509 from "@peculiar/x509";

// @peculiar/x509 signs through WebCrypto; Node's is the real one (no polyfill).
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export const CA_ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

/** The deployment's CA for TLS towards bound hosts (decision 0133): PEM text of both parts. */
export type DeploymentCa = { readonly certPem: string; readonly keyPem: string };

/** The CA loaded for signing: its certificate and its private key as a WebCrypto key. */
export type SigningCa = {
  readonly cert: x509.X509Certificate;
  readonly certPem: string;
  readonly key: webcrypto.CryptoKey;
};

const DAY_MS = 86_400_000;

/**
 * A new CA (ECDSA P-256, ten years, path length 0: it signs leaves only). Made once per
 * deployment, at install (`npm run secrets:ca`) or on local mode's first start; its key
 * stays on the nodes, its certificate goes into every sandbox's trust.
 */
export async function generateDeploymentCa(
  commonName = "Workcell egress CA",
): Promise<DeploymentCa> {
  const keys = await webcrypto.subtle.generateKey(CA_ALGORITHM, true, ["sign", "verify"]);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(16)
      .toString("hex")
      .replace(/^[89a-f]/, "1"),
    name: `CN=${commonName} ${randomBytes(4).toString("hex")}`,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 3650 * DAY_MS),
    signingAlgorithm: CA_ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pkcs8 = await webcrypto.subtle.exportKey("pkcs8", keys.privateKey);
  const keyPem = createPrivateKey({ key: Buffer.from(pkcs8), format: "der", type: "pkcs8" })
    .export({ format: "pem", type: "pkcs8" })
    .toString();
  return { certPem: cert.toString("pem"), keyPem };
}

/** The CA ready to sign (its key imported non-extractable). */
export async function signingCa(ca: DeploymentCa): Promise<SigningCa> {
  const der = createPrivateKey(ca.keyPem).export({ format: "der", type: "pkcs8" });
  const key = await webcrypto.subtle.importKey("pkcs8", der, CA_ALGORITHM, false, ["sign"]);
  return { cert: new x509.X509Certificate(ca.certPem), certPem: ca.certPem, key };
}

/** Reads the CA's two PEM files (WORKCELL_SECRETS_CA_CERT / WORKCELL_SECRETS_CA_KEY). */
export async function readDeploymentCa(certPath: string, keyPath: string): Promise<DeploymentCa> {
  const [certPem, keyPem] = await Promise.all([
    readFile(certPath, "utf8"),
    readFile(keyPath, "utf8"),
  ]);
  return { certPem, keyPem };
}
