import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

// A small AWS KMS on loopback speaking the service's real wire protocol (AWS JSON 1.1:
// POST /, X-Amz-Target: TrentService.<Operation>, base64 blobs, errors as `__type` with
// x-amzn-ErrorType), so the real @aws-sdk/client-kms talks to it through `endpoint`
// (decision 0165: no KMS emulator is on npm). It does real AES-256-GCM under its own key
// per KMS key and binds every ciphertext to its encryption context, as KMS does. It does
// not check SigV4 signatures, only that a request is signed.

const REGION = "us-east-1";
const ACCOUNT = "111122223333";
const IV = 12;
const TAG = 16;
const UUID_LEN = 36;

export type FakeKms = {
  /** http://127.0.0.1:<port>, for the client's `endpoint`. */
  readonly endpoint: string;
  /** A new enabled key; `alias` (e.g. "alias/workcell-secrets") names it too. */
  createKey(alias?: string): { keyId: string; arn: string };
  /** While set, every call answers AccessDeniedException (a role without the grant). */
  denyAll(deny: boolean): void;
  /** Operations served so far (e.g. "Encrypt"), in order. */
  readonly calls: readonly string[];
  /** Every request body received (base64 blobs as sent). */
  readonly bodies: readonly string[];
  close(): Promise<void>;
};

class KmsError extends Error {
  readonly type: string;
  readonly status: number;
  constructor(type: string, message: string, status = 400) {
    super(message);
    this.type = type;
    this.status = status;
  }
}

type Body = Record<string, unknown>;

/** Canonical bytes of an encryption context: order of keys does not matter, as in KMS. */
function contextAad(context: unknown): Buffer {
  const entries = Object.entries((context ?? {}) as Record<string, string>).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  return Buffer.from(JSON.stringify(entries), "utf8");
}

function blobOf(body: Body, field: string): Buffer {
  const text = body[field];
  if (typeof text !== "string" || text === "") {
    throw new KmsError("ValidationException", `1 validation error detected: ${field} is required`);
  }
  return Buffer.from(text, "base64");
}

export async function startFakeKms(): Promise<FakeKms> {
  const keys = new Map<string, Buffer>();
  const aliases = new Map<string, string>();
  const calls: string[] = [];
  const bodies: string[] = [];
  let deny = false;
  const arnOf = (id: string) => `arn:aws:kms:${REGION}:${ACCOUNT}:key/${id}`;

  function resolve(keyId: unknown): string {
    if (typeof keyId !== "string") throw new KmsError("ValidationException", "KeyId is required");
    const bare = keyId.replace(/^arn:aws:kms:[^:]+:\d+:/, "");
    const id = bare.startsWith("alias/") ? aliases.get(bare) : bare.replace(/^key\//, "");
    if (id === undefined || !keys.has(id)) {
      throw new KmsError("NotFoundException", `Key '${keyId}' does not exist`);
    }
    return id;
  }

  function encrypt(id: string, plain: Buffer, context: unknown): Buffer {
    const key = keys.get(id) as Buffer;
    const iv = randomBytes(IV);
    const cipher = createCipheriv("aes-256-gcm", key, iv);
    cipher.setAAD(contextAad(context));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([Buffer.from(id, "ascii"), iv, cipher.getAuthTag(), body]);
  }

  function decrypt(body: Body): { id: string; plain: Buffer } {
    const blob = blobOf(body, "CiphertextBlob");
    const id = blob.subarray(0, UUID_LEN).toString("ascii");
    const key = keys.get(id);
    if (key === undefined || blob.length < UUID_LEN + IV + TAG) {
      throw new KmsError("InvalidCiphertextException", "");
    }
    if (body.KeyId !== undefined && resolve(body.KeyId) !== id) {
      throw new KmsError(
        "IncorrectKeyException",
        "The key ID in the request does not identify a KMS key that can perform this operation.",
      );
    }
    try {
      const decipher = createDecipheriv("aes-256-gcm", key, blob.subarray(UUID_LEN, UUID_LEN + IV));
      decipher.setAAD(contextAad(body.EncryptionContext));
      decipher.setAuthTag(blob.subarray(UUID_LEN + IV, UUID_LEN + IV + TAG));
      const rest = blob.subarray(UUID_LEN + IV + TAG);
      return { id, plain: Buffer.concat([decipher.update(rest), decipher.final()]) };
    } catch {
      // KMS says nothing more when the context or the bytes do not match.
      throw new KmsError("InvalidCiphertextException", "");
    }
  }

  const operations: Record<string, (body: Body) => Body> = {
    Encrypt(body) {
      const id = resolve(body.KeyId);
      const plain = blobOf(body, "Plaintext");
      if (plain.length > 4096) throw new KmsError("ValidationException", "Plaintext too long");
      const blob = encrypt(id, plain, body.EncryptionContext);
      return {
        CiphertextBlob: blob.toString("base64"),
        KeyId: arnOf(id),
        EncryptionAlgorithm: "SYMMETRIC_DEFAULT",
      };
    },
    Decrypt(body) {
      const { id, plain } = decrypt(body);
      return {
        Plaintext: plain.toString("base64"),
        KeyId: arnOf(id),
        EncryptionAlgorithm: "SYMMETRIC_DEFAULT",
      };
    },
    GenerateDataKey(body) {
      const id = resolve(body.KeyId);
      const size = body.KeySpec === "AES_128" ? 16 : Number(body.NumberOfBytes ?? 32);
      const plain = randomBytes(size);
      return {
        CiphertextBlob: encrypt(id, plain, body.EncryptionContext).toString("base64"),
        Plaintext: plain.toString("base64"),
        KeyId: arnOf(id),
      };
    },
  };

  function answer(res: ServerResponse, status: number, body: Body, type?: string): void {
    res.writeHead(status, {
      "content-type": "application/x-amz-json-1.1",
      "x-amzn-requestid": randomUUID(),
      ...(type === undefined ? {} : { "x-amzn-errortype": type }),
    });
    res.end(JSON.stringify(body));
  }

  function serve(req: IncomingMessage, text: string): Body {
    const target = String(req.headers["x-amz-target"] ?? "");
    if (req.method !== "POST" || req.url !== "/" || !target.startsWith("TrentService.")) {
      throw new KmsError("UnknownOperationException", "");
    }
    if (!String(req.headers["content-type"]).startsWith("application/x-amz-json-1.1")) {
      throw new KmsError(
        "SerializationException",
        "Content type must be application/x-amz-json-1.1",
      );
    }
    if (!String(req.headers.authorization ?? "").startsWith("AWS4-HMAC-SHA256 ")) {
      throw new KmsError("MissingAuthenticationTokenException", "Missing Authentication Token");
    }
    const name = target.slice("TrentService.".length);
    const operation = operations[name];
    if (operation === undefined) throw new KmsError("UnknownOperationException", "");
    calls.push(name);
    bodies.push(text);
    if (deny) {
      throw new KmsError(
        "AccessDeniedException",
        `User: arn:aws:sts::${ACCOUNT}:assumed-role/test is not authorized to perform: kms:${name}`,
      );
    }
    return operation(JSON.parse(text === "" ? "{}" : text) as Body);
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      try {
        answer(res, 200, serve(req, Buffer.concat(chunks).toString("utf8")));
      } catch (error) {
        const e = error instanceof KmsError ? error : new KmsError("KMSInternalException", "", 500);
        answer(res, e.status, { __type: e.type, message: e.message }, e.type);
      }
    });
  });
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    createKey(alias) {
      const id = randomUUID();
      keys.set(id, randomBytes(32));
      if (alias !== undefined) aliases.set(alias, id);
      return { keyId: id, arn: arnOf(id) };
    },
    denyAll(value) {
      deny = value;
    },
    calls,
    bodies,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
