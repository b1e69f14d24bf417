import { createHmac } from "node:crypto";
import { type IncomingMessage, Server, type ServerResponse } from "node:http";
import { type FauxqsServer, startFauxqs } from "fauxqs";

/** Where the local SQS + S3 emulator listens: never beyond this machine. */
export const LOCAL_EMULATOR_HOST = "127.0.0.1";

export type LocalAwsCredentials = { accessKeyId: string; secretAccessKey: string };

/**
 * The emulator's credentials, derived from the install's dev secret (DATA_DIR/secrets.json,
 * 0600): unique per install, stable across restarts, and unknown to anyone who cannot read
 * that file. Derived rather than stored so existing secrets files need no migration.
 */
export function localAwsCredentials(devJwtSecret: string): LocalAwsCredentials {
  const derive = (label: string) => createHmac("sha256", devJwtSecret).update(label).digest("hex");
  return {
    accessKeyId: `WCL${derive("workcell-local-aws-access-key-id").slice(0, 17).toUpperCase()}`,
    secretAccessKey: derive("workcell-local-aws-secret-access-key"),
  };
}

/**
 * The credentials upload URLs handed to users are presigned with: derived like the
 * emulator's but with other labels, so the emulator refuses them; only the local upload
 * path (console/verify-presigned-put.ts) accepts URLs signed with them, after verifying
 * the signature for the one object, size and expiry the server granted.
 */
export function localUploadCredentials(devJwtSecret: string): LocalAwsCredentials {
  const derive = (label: string) => createHmac("sha256", devJwtSecret).update(label).digest("hex");
  return {
    accessKeyId: `WCU${derive("workcell-local-upload-access-key-id").slice(0, 17).toUpperCase()}`,
    secretAccessKey: derive("workcell-local-upload-secret-access-key"),
  };
}

/**
 * fauxqs as the local Workcell runs it: bound to loopback, and answering only requests
 * signed with this install's access key id (header or presigned-query SigV4); anything
 * else gets 403 before fauxqs sees it.
 *
 * fauxqs 2.x always listens on 0.0.0.0 and checks no credentials. Its options have no
 * bind address and its server object is not exposed, so for the duration of its start
 * (and only then) the `http.Server#listen` of the process rewrites a 0.0.0.0 bind to
 * loopback and remembers the server, whose request listener is then wrapped. Rewriting
 * only ever narrows a bind, so another server starting in that window loses nothing.
 *
 * The signature itself is not verified (fauxqs does not): the access key id acts as the
 * shared secret, on a socket only this machine can reach, and it never leaves the server
 * (upload URLs carry other credentials: localUploadCredentials). docs/decisions/0016, 0094.
 */
export async function startLoopbackFauxqs(
  options: Parameters<typeof startFauxqs>[0],
  credentials: LocalAwsCredentials,
): Promise<FauxqsServer> {
  const original = Server.prototype.listen;
  let started: Server | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: listen has many overloads; we forward them.
  Server.prototype.listen = function listenOnLoopback(this: Server, ...args: any[]) {
    const [first] = args;
    if (first !== null && typeof first === "object" && first.host === "0.0.0.0") {
      args[0] = { ...first, host: LOCAL_EMULATOR_HOST };
      started = this;
    }
    return original.apply(this, args as Parameters<typeof original>);
  } as typeof original;
  let fauxqs: FauxqsServer;
  try {
    fauxqs = await startFauxqs({ ...options, host: LOCAL_EMULATOR_HOST });
  } finally {
    Server.prototype.listen = original;
  }
  if (started === undefined) {
    await fauxqs.stop();
    throw new Error(
      "fauxqs did not bind 0.0.0.0 as expected, so its address could not be narrowed to loopback: check the installed fauxqs version against infra/local/loopback-fauxqs.ts.",
    );
  }
  requireAccessKey(started, credentials.accessKeyId);
  return fauxqs;
}

function requireAccessKey(server: Server, accessKeyId: string): void {
  const handlers = server.listeners("request") as Array<
    (req: IncomingMessage, res: ServerResponse) => void
  >;
  server.removeAllListeners("request");
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    if (signedAccessKeyId(req) !== accessKeyId) {
      res.writeHead(403, { "content-type": "text/plain" });
      res.end("Forbidden: sign requests with this Workcell's local credentials.\n");
      req.resume();
      return;
    }
    for (const handler of handlers) handler.call(server, req, res);
  });
}

/** The access key id a SigV4 request names (Authorization header or X-Amz-Credential). */
export function signedAccessKeyId(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (typeof header === "string") {
    return /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\//.exec(header)?.[1];
  }
  const query = new URL(req.url ?? "/", "http://emulator").searchParams;
  return query.get("X-Amz-Credential")?.split("/")[0];
}
