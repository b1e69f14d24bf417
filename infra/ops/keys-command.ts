import { parseArgs } from "node:util";
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from "jose";
import { CAPABILITY_ALGORITHM } from "../../shared/capability/capability-claims.ts";
import { type OpsIo, UsageError } from "./ops-io.ts";

export const KEY_FORMATS = ["env", "json"] as const;
export type KeyFormat = (typeof KEY_FORMATS)[number];

export type CapabilityKeyPair = {
  /** CAPABILITY_PRIVATE_KEY of functions/ (the signer): an Ed25519 private JWK as JSON. */
  privateJwk: string;
  /** CAPABILITY_PUBLIC_KEY of every agent-host (the verifiers): the public half only. */
  publicJwk: string;
  /** RFC 7638 thumbprint, set as `kid` on both halves so logs can tell keys apart in a rotation. */
  kid: string;
};

/** A fresh Ed25519 pair in the exact form both planes' env schemas parse. */
export async function generateCapabilityKeyPair(): Promise<CapabilityKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(CAPABILITY_ALGORITHM, {
    crv: "Ed25519",
    extractable: true,
  });
  const pub = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(pub);
  const priv = await exportJWK(privateKey);
  return {
    privateJwk: JSON.stringify({ ...priv, kid }),
    publicJwk: JSON.stringify({ ...pub, kid }),
    kid,
  };
}

// `env`: KEY='json' lines. Single quotes because the JSON is full of double quotes, which
// systemd's EnvironmentFile= and POSIX shells would otherwise strip; inside single quotes
// both take the text literally (a JWK never contains a single quote: base64url + JSON).
// `json`: one object, for tools that set variables themselves (docker --env-file takes
// values literally, SST secrets, a secrets manager).
export function formatKeyPair(pair: CapabilityKeyPair, format: KeyFormat): string {
  if (format === "json") {
    return `${JSON.stringify({
      CAPABILITY_PRIVATE_KEY: pair.privateJwk,
      CAPABILITY_PUBLIC_KEY: pair.publicJwk,
    })}\n`;
  }
  return [
    `# Capability key pair ${pair.kid}, made by \`workcell keys generate\`.`,
    "# functions/ (the API, the sweeper): the private key. Keep it secret.",
    `CAPABILITY_PRIVATE_KEY='${pair.privateJwk}'`,
    "# Every agent-host: the public key only.",
    `CAPABILITY_PUBLIC_KEY='${pair.publicJwk}'`,
    "",
  ].join("\n");
}

export async function keysCommand(argv: readonly string[], io: OpsIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== "generate") {
    throw new UsageError("usage: workcell keys generate [--format env|json]");
  }
  const { values } = parseArgs({
    args: [...rest],
    options: { format: { type: "string", default: "env" } },
    strict: true,
  });
  const format = values.format as KeyFormat;
  if (!KEY_FORMATS.includes(format)) {
    throw new UsageError(`--format must be one of ${KEY_FORMATS.join(", ")}`);
  }
  io.stdout(formatKeyPair(await generateCapabilityKeyPair(), format));
  return 0;
}
