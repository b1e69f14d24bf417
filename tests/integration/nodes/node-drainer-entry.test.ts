import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createDb } from "../../../shared/db/client.ts";
import { nodes } from "../../../shared/db/schema.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";

// The drainer's Lambda entry as deployed (functions/entry/node-drainer.ts): its env parsed
// with its schema, the real AWS SDK Auto Scaling client, real Postgres. There is no Auto
// Scaling emulator, so a loopback server speaking the Query protocol's answer stands in
// for the API (reached through AWS_ENDPOINT_URL, as fauxqs is for SQS and S3) and records
// what the SDK signed and sent.

let database: TestDatabase;
let server: Server;
const received: URLSearchParams[] = [];
const saved = { ...process.env };
let handler: (event: unknown) => Promise<{ node_id: string; outcome: string }>;

beforeAll(async () => {
  database = await freshDatabase();
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8");
    });
    req.on("end", () => {
      const form = new URLSearchParams(body);
      if (req.headers.authorization?.startsWith("AWS4-HMAC-SHA256 ") !== true) {
        res.writeHead(403).end();
        return;
      }
      received.push(form);
      res.writeHead(200, { "content-type": "text/xml" });
      res.end(
        `<CompleteLifecycleActionResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><CompleteLifecycleActionResult/><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></CompleteLifecycleActionResponse>`,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(process.env, {
    DATABASE_URL: database.url,
    NODE_DRAIN_BUDGET_SECONDS: "60",
    NODE_DRAIN_POLL_SECONDS: "1",
    AWS_REGION: "eu-west-1",
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: "silent",
  });
  ({ handler } = await import("../../../functions/entry/node-drainer.ts"));
});
afterAll(async () => {
  process.env = saved;
  server?.close();
  await database?.drop();
});

const terminating = (instanceId: string) => ({
  "detail-type": "EC2 Instance-terminate Lifecycle Action",
  source: "aws.autoscaling",
  detail: {
    LifecycleActionToken: "3f2c1d7e-token",
    AutoScalingGroupName: "workcell-prod-Nodes",
    LifecycleHookName: "workcell-prod-NodeDrain",
    EC2InstanceId: instanceId,
    LifecycleTransition: "autoscaling:EC2_INSTANCE_TERMINATING",
  },
});

test("an idle node is quiesced and its lifecycle action completed with CONTINUE", async () => {
  const db = createDb(database.sql);
  const node = "i-0123456789abcdef0";
  await db.insert(nodes).values({ nodeId: node, dataPlaneUrl: "https://dp.example.com" });
  expect(await handler(terminating(node))).toEqual({ node_id: node, outcome: "drained" });
  const [row] = await db.select({ state: nodes.state }).from(nodes).where(eq(nodes.nodeId, node));
  expect(row?.state).toBe("quiesced");
  expect(received.map((form) => Object.fromEntries(form))).toEqual([
    {
      Action: "CompleteLifecycleAction",
      Version: "2011-01-01",
      AutoScalingGroupName: "workcell-prod-Nodes",
      LifecycleHookName: "workcell-prod-NodeDrain",
      LifecycleActionToken: "3f2c1d7e-token",
      InstanceId: node,
      LifecycleActionResult: "CONTINUE",
    },
  ]);
});

test("a malformed event is refused: no node changes, no lifecycle call", async () => {
  const db = createDb(database.sql);
  const node = "i-0fedcba9876543210";
  await db.insert(nodes).values({ nodeId: node, dataPlaneUrl: "https://dp.example.com" });
  const before = received.length;
  const bad = terminating(node);
  bad.detail.LifecycleTransition = "autoscaling:EC2_INSTANCE_LAUNCHING";
  await expect(handler(bad)).rejects.toThrow();
  const [row] = await db.select({ state: nodes.state }).from(nodes).where(eq(nodes.nodeId, node));
  expect(row?.state).toBe("active");
  expect(received.length).toBe(before);
});
