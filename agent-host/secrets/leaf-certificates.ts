import { randomBytes, webcrypto } from "node:crypto";
import { createSecureContext, type SecureContext } from "node:tls";
import * as x509 from "@peculiar/x509";
import { CA_ALGORITHM, type SigningCa } from "./deployment-ca.ts";

const DAY_MS = 86_400_000;
const LEAF_DAYS = 7;
/** Bound host names seen by one node are few; past this the cache starts over. */
const MAX_CACHED = 1000;

/** TLS server contexts for bound host names, signed by the deployment CA (decision 0133). */
export type LeafIssuer = {
  contextFor(host: string): Promise<SecureContext>;
};

type Cached = { readonly context: Promise<SecureContext>; readonly renewAt: number };

/**
 * Leaves are minted on demand per host name (one P-256 key for all of them, made once:
 * the key never leaves agent-host's memory) and kept until a day before they expire, so a
 * bound host costs one signature per node per week.
 */
export function createLeafIssuer(
  signing: Promise<SigningCa>,
  now: () => number = Date.now,
): LeafIssuer {
  // A CA that does not load fails each termination (502), never the process.
  signing.catch(() => {});
  const cache = new Map<string, Cached>();
  const leafKeys = webcrypto.subtle.generateKey(CA_ALGORITHM, true, ["sign", "verify"]);
  const keyPem = leafKeys.then(async (keys) => {
    const der = await webcrypto.subtle.exportKey("pkcs8", keys.privateKey);
    return x509.PemConverter.encode(der, "PRIVATE KEY");
  });
  async function mint(host: string): Promise<SecureContext> {
    const ca = await signing;
    const keys = await leafKeys;
    const at = now();
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomBytes(16)
        .toString("hex")
        .replace(/^[89a-f]/, "1"),
      subject: `CN=${host}`,
      issuer: ca.cert.subject,
      notBefore: new Date(at - DAY_MS),
      notAfter: new Date(at + LEAF_DAYS * DAY_MS),
      signingAlgorithm: CA_ALGORITHM,
      publicKey: keys.publicKey,
      signingKey: ca.key,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: "dns", value: host }]),
      ],
    });
    return createSecureContext({
      key: await keyPem,
      cert: `${cert.toString("pem")}\n${ca.certPem}`,
      minVersion: "TLSv1.2",
    });
  }
  return {
    contextFor(host) {
      const hit = cache.get(host);
      if (hit !== undefined && hit.renewAt > now()) return hit.context;
      if (cache.size >= MAX_CACHED) cache.clear();
      const context = mint(host);
      // A failed mint is not kept: the next connection tries again.
      context.catch(() => cache.delete(host));
      cache.set(host, { context, renewAt: now() + (LEAF_DAYS - 1) * DAY_MS });
      return context;
    },
  };
}
