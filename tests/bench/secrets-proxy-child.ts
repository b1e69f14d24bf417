// The egress proxy with secrets brokering in a process of its own, for secrets.bench.ts
// (as on a node: the proxy and the sandbox's clients do not share an event loop). Args: a
// JSON {dbUrl, dir, keyBase64, upstreamCaPath, uid}. Prints {path, placeholder, caPem}
// once listening and exits when stdin closes.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import postgres from "postgres";
import { createAddressGuard } from "../../agent-host/egress/address-guard.ts";
import { createEgressProxy } from "../../agent-host/egress/egress-proxy.ts";
import { generateDeploymentCa } from "../../agent-host/secrets/deployment-ca.ts";
import { prepareNodeSecrets } from "../../agent-host/secrets/node-secrets.ts";
import { createSandboxSecrets } from "../../agent-host/secrets/sandbox-secrets.ts";
import { createDb } from "../../shared/db/client.ts";
import { NO_NETWORK } from "../../shared/network/network-policy.ts";
import { findNetworkCeiling } from "../../shared/network/network-policy-store.ts";
import { createEnvKeyWrapper } from "../../shared/secrets/secret-envelope.ts";

const args = JSON.parse(process.argv[2] ?? "{}") as {
  dbUrl: string;
  dir: string;
  keyBase64: string;
  upstreamCaPath: string;
  uid: string;
};
const sql = postgres(args.dbUrl, { max: 10, onnotice: () => {} });
const db = createDb(sql);
const ca = await generateDeploymentCa("Workcell bench CA");
const node = prepareNodeSecrets(db, {
  keys: createEnvKeyWrapper(Buffer.from(args.keyBase64, "base64")),
  ca,
  runtimeBundle: "",
  extraUpstreamCa: [await readFile(args.upstreamCaPath, "utf8")],
});
const proxy = createEgressProxy({
  ceiling: (uid) => findNetworkCeiling(db, uid, NO_NETWORK),
  guard: createAddressGuard(),
  audit: () => {},
  interception: node.interception,
});
const secrets = createSandboxSecrets(args.uid, ["BENCH_TOKEN"], node.source);
const opened = await proxy.open(
  {
    uid: args.uid,
    runId: "00000000-0000-4000-8000-000000000035",
    sandboxId: "bench-secrets",
    generation: 1,
  },
  1e12,
  args.dir,
  undefined,
  { secrets },
);
process.stdout.write(
  `${JSON.stringify({
    path: join(args.dir, opened.relativePath),
    placeholder: secrets.placeholders.get("BENCH_TOKEN"),
    caPem: ca.certPem,
  })}\n`,
);
createInterface({ input: process.stdin }).on("close", async () => {
  await proxy.close();
  await sql.end({ timeout: 5 });
  process.exit(0);
});
