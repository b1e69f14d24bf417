// A data-plane server in its own process, so a test can measure the server's own memory
// (/proc/<pid>/status VmHWM) while it streams large files. Started by streaming.test.ts:
// env DATA_ROOT and CAPABILITY_PUBLIC_KEY (a JWK); prints {"url": ...} once listening and
// exits when its stdin closes (the parent went away).
import { pino } from "pino";
import { z } from "zod";
import { createDataPlaneApp, startDataPlaneServer } from "../../../agent-host/data-plane/index.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { absolutePathVar, ed25519PublicJwkVar } from "../../../shared/env/env-vars.ts";
import { parseEnv } from "../../../shared/env/parse-env.ts";

const env = parseEnv(
  z.object({ DATA_ROOT: absolutePathVar(), CAPABILITY_PUBLIC_KEY: ed25519PublicJwkVar() }),
  process.env,
);
const sys = createLibcSyscalls();
const app = createDataPlaneApp({
  userWorkspaces: createUserWorkspaces({
    dataRoot: env.DATA_ROOT,
    sys,
    resolver: createPathResolver(sys),
    owner: { uid: 1000, gid: 1000 },
  }),
  publicKeys: [env.CAPABILITY_PUBLIC_KEY],
  logger: pino({ level: "silent" }),
});
const server = await startDataPlaneServer({ app, port: 0 });
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
process.stdin.resume();
process.stdin.on("end", () => {
  void server.close().then(() => process.exit(0));
});
