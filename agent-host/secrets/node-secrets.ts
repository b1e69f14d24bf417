import { createSecureContext, getCACertificates } from "node:tls";
import { abortable } from "../../shared/async/abortable.ts";
import type { Db } from "../../shared/db/client.ts";
import type { KeyWrapper } from "../../shared/secrets/secret-envelope.ts";
import { loadLiveSecrets } from "../../shared/secrets/secret-store.ts";
import { type DeploymentCa, signingCa } from "./deployment-ca.ts";
import type { Interception } from "./interception.ts";
import { createLeafIssuer } from "./leaf-certificates.ts";
import type { SecretSource } from "./sandbox-secrets.ts";
import { sandboxCaBundle } from "./secrets-env.ts";

/** What a node needs to broker secrets (agent-host env: WORKCELL_SECRETS_KEY, _CA_CERT, _CA_KEY). */
export type NodeSecretsConfig = {
  readonly keys: KeyWrapper;
  readonly ca: DeploymentCa;
  /** The Runtime Assets' CA bundle (text), which the sandbox bundle extends. */
  readonly runtimeBundle: string;
  /** Extra roots for upstream verification (tests' fake internet); never a way to skip it. */
  readonly extraUpstreamCa?: readonly string[];
  /** Deadline of one read of a user's secrets. */
  readonly readTimeoutMs?: number;
};

export type NodeSecrets = {
  readonly source: SecretSource;
  readonly interception: Interception;
  /** The bundle placed beside each socket of a sandbox with secrets. */
  readonly caBundle: string;
};

/**
 * The system's trust store (what the node's OpenSSL would use), else Node's bundled
 * Mozilla roots where the system has none, plus any extra roots.
 */
export function upstreamTrust(extra: readonly string[] = []): string[] {
  const system = getCACertificates("system");
  return [...(system.length > 0 ? system : getCACertificates("bundled")), ...extra];
}

export function prepareNodeSecrets(db: Db, config: NodeSecretsConfig): NodeSecrets {
  const timeoutMs = config.readTimeoutMs ?? 5_000;
  return {
    source: (uid, signal) =>
      abortable(
        loadLiveSecrets(db, config.keys, uid),
        AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
        "secrets read",
      ),
    interception: {
      issuer: createLeafIssuer(signingCa(config.ca)),
      upstreamContext: createSecureContext({ ca: upstreamTrust(config.extraUpstreamCa) }),
    },
    caBundle: sandboxCaBundle(config.runtimeBundle, config.ca.certPem),
  };
}
