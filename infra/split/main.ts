// `node infra/split/main.ts --postgres-admin-url postgres://postgres@127.0.0.1:5432/postgres`
// brings up the split deployment of docs/deploy/split.md on this machine (a database of its
// own on that server, fauxqs, the control plane with its sweeper, two agent-hosts sharing a
// data root), prints where everything is, and tears it all down on Ctrl-C / SIGTERM.
import { parseArgs } from "node:util";
import { mintDevToken } from "../local/dev-token.ts";
import { startSplit } from "./start-split.ts";

const { values } = parseArgs({
  options: {
    "postgres-admin-url": { type: "string" },
    "node-ttl-seconds": { type: "string", default: "30" },
    "sweep-interval-ms": { type: "string", default: "15000" },
    "sandbox-image": { type: "string" },
  },
  strict: true,
});
const adminUrl = values["postgres-admin-url"] ?? process.env.POSTGRES_ADMIN_URL;
if (!adminUrl) {
  process.stderr.write(
    "usage: node infra/split/main.ts --postgres-admin-url postgres://… [--node-ttl-seconds N] [--sweep-interval-ms N] [--sandbox-image IMAGE]\n",
  );
  process.exit(2);
}
const split = await startSplit({
  postgresAdminUrl: adminUrl,
  nodeTtlSeconds: Number(values["node-ttl-seconds"]),
  sweepIntervalMs: Number(values["sweep-interval-ms"]),
  logLevel: "info",
  agentHostExtra:
    values["sandbox-image"] === undefined ? {} : { SANDBOX_IMAGE: values["sandbox-image"] },
});
process.stdout.write(
  [
    `control plane   ${split.functionsUrl}   (AUTH_MODE=dev)`,
    `dev token       ${await mintDevToken(split.devJwtSecret, "dev")}   (uid dev, 12 h)`,
    ...split.nodes.map((n) => `agent-host      ${n.nodeId}   ${n.dataPlaneUrl}`),
    `SQS + S3        ${split.emulator.endpoint}   queue ${split.emulator.runQueueUrl}`,
    `data root       ${split.dataRoot}`,
    "Ctrl-C stops everything and drops the database.",
    "",
  ].join("\n"),
);
const stop = async () => {
  await split.stop();
  process.exit(0);
};
process.once("SIGINT", () => void stop());
process.once("SIGTERM", () => void stop());
