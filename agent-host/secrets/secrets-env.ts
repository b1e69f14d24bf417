import type { SandboxSecrets } from "./sandbox-secrets.ts";

/** The name of the CA bundle placed beside a sandbox's socket. */
export const CA_BUNDLE_FILE = "ca-bundle.pem";

/** The Runtime Assets' CA bundle (inside the tree) that the sandbox bundle extends. */
export const RUNTIME_CA_BUNDLE = "etc/ssl/certs/ca-certificates.crt";

/**
 * The sandbox's trust: the Runtime Assets' bundle and the deployment CA, one file, so
 * tools that take one path (curl, git, Python's requests, pip) trust both the public CAs
 * and the proxy's leaves for bound hosts.
 */
export function sandboxCaBundle(runtimeBundle: string, deploymentCaPem: string): string {
  const base =
    runtimeBundle.endsWith("\n") || runtimeBundle === "" ? runtimeBundle : `${runtimeBundle}\n`;
  return `${base}# Workcell deployment CA (TLS towards hosts your secrets are bound to)\n${deploymentCaPem.trim()}\n`;
}

/**
 * One variable per secret holding this sandbox generation's placeholder, never a value
 * (decision 0132), and the variables that point the usual clients at the bundle.
 */
export function secretsEnv(
  secrets: SandboxSecrets,
  bundleInSandbox: string | undefined,
): Record<string, string> {
  const env: Record<string, string> = Object.fromEntries(secrets.placeholders);
  if (bundleInSandbox !== undefined) {
    for (const name of [
      "SSL_CERT_FILE",
      "CURL_CA_BUNDLE",
      "REQUESTS_CA_BUNDLE",
      "NODE_EXTRA_CA_CERTS",
      "GIT_SSL_CAINFO",
      "PIP_CERT",
    ])
      env[name] = bundleInSandbox;
  }
  return env;
}
