import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type CryptoKey,
  exportJWK,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  SignJWT,
} from "jose";

export type SigningKey = { kid: string; alg: string; privateKey: CryptoKey; publicJwk: JWK };

/** A key pair of an identity provider, published by kid. */
export async function newSigningKey(kid: string, alg = "RS256"): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return {
    kid,
    alg,
    privateKey,
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" },
  };
}

export async function signToken(
  key: SigningKey,
  claims: JWTPayload,
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, ...header })
    .sign(key.privateKey);
}

export type JwksServer = {
  url: string;
  /** Replace the published keys (key rotation). */
  publish(keys: SigningKey[]): void;
  /** How many times the key set was fetched. */
  fetches(): number;
  close(): Promise<void>;
};

/** An identity provider's JWKS endpoint: a real HTTP server on a free port. */
export async function startJwksServer(keys: SigningKey[]): Promise<JwksServer> {
  let published = keys;
  let count = 0;
  const server = createServer((req, res) => {
    count++;
    if (req.url !== "/jwks.json") return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ keys: published.map((k) => k.publicJwk) }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks.json`,
    publish: (next) => {
      published = next;
    },
    fetches: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
