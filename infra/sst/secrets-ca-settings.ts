import { createPrivateKey, X509Certificate } from "node:crypto";

/**
 * Checks the deployment CA an operator stored (`npm run secrets:ca`, then the SST secrets
 * SecretsCaCert and SecretsCaKey) before any node gets it: a certificate that is a CA, and
 * the private key that belongs to it. A bad pair fails the deploy; the message names what
 * is wrong, never any part of the key.
 */
export function checkDeploymentCaPems(
  certPem: string,
  keyPem: string,
): { certPem: string; keyPem: string } {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    throw new Error("SecretsCaCert is not a PEM certificate (npm run secrets:ca makes one)");
  }
  if (!cert.ca) throw new Error("SecretsCaCert is not a CA certificate (basicConstraints CA:true)");
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    throw new Error("SecretsCaKey is not a PEM private key");
  }
  if (!cert.checkPrivateKey(key)) {
    throw new Error("SecretsCaKey is not the private key of SecretsCaCert");
  }
  return { certPem: certPem.trim().concat("\n"), keyPem: keyPem.trim().concat("\n") };
}
