// The data plane with the attachments bucket, in its own process, so a test can read the
// process's own peak memory (/proc/<pid>/status VmHWM) while it imports a large object.
// Env: DATA_ROOT, CAPABILITY_PUBLIC_KEY (a JWK), AWS_ENDPOINT_URL, ATTACHMENTS_BUCKET.
// Prints {"url": ...} once listening; exits when its stdin closes (the parent went away).
import { S3Client } from "@aws-sdk/client-s3";
import { pino } from "pino";
import { z } from "zod";
import { createS3AttachmentObjectStore } from "../../../../agent-host/attachments/s3-attachment-object-store.ts";
import {
  createDataPlaneApp,
  startDataPlaneServer,
} from "../../../../agent-host/data-plane/index.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../../agent-host/workspace/index.ts";
import {
  absolutePathVar,
  ed25519PublicJwkVar,
  httpUrlVar,
} from "../../../../shared/env/env-vars.ts";
import { parseEnv } from "../../../../shared/env/parse-env.ts";

const env = parseEnv(
  z.object({
    DATA_ROOT: absolutePathVar(),
    CAPABILITY_PUBLIC_KEY: ed25519PublicJwkVar(),
    AWS_ENDPOINT_URL: httpUrlVar(),
    ATTACHMENTS_BUCKET: z.string().min(1),
  }),
  process.env,
);
const s3 = new S3Client({
  endpoint: env.AWS_ENDPOINT_URL,
  region: "us-east-1",
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
  forcePathStyle: true,
});
const sys = createLibcSyscalls();
const app = createDataPlaneApp({
  userWorkspaces: createUserWorkspaces({
    dataRoot: env.DATA_ROOT,
    sys,
    resolver: createPathResolver(sys),
  }),
  publicKeys: [env.CAPABILITY_PUBLIC_KEY],
  logger: pino({ level: "silent" }),
  attachments: { objects: createS3AttachmentObjectStore({ s3, bucket: env.ATTACHMENTS_BUCKET }) },
});
const server = await startDataPlaneServer({ app, port: 0 });
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
process.stdin.resume();
process.stdin.on("end", () => {
  void server.close().then(() => process.exit(0));
});
