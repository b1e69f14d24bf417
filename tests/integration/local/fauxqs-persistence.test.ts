import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterEach, describe, expect, test } from "vitest";
import { localAwsCredentials, startLoopbackFauxqs } from "../../../infra/local/loopback-fauxqs.ts";

// Decision 0182: the local SQS emulator's SQLite runs `synchronous = NORMAL` (patched at
// install by scripts/patch-fauxqs.mjs) instead of an fsync per message on Node's main
// thread. What the local Workcell relies on stays: a message sent and not deleted is
// there after the emulator restarts, a deleted one is not.

const credentials = localAwsCredentials("a-dev-secret-of-this-install");
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function started(dataDir: string) {
  const fauxqs = await startLoopbackFauxqs({ port: 0, logger: false, dataDir }, credentials);
  const sqs = new SQSClient({ endpoint: fauxqs.address, region: "us-east-1", credentials });
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "runs" }));
  if (QueueUrl === undefined) throw new Error("no queue URL");
  return { fauxqs, sqs, queueUrl: QueueUrl };
}

describe("the local emulator's persistence", () => {
  test("the installed fauxqs sets synchronous NORMAL right after WAL", async () => {
    const entry = fileURLToPath(import.meta.resolve("fauxqs"));
    const text = await readFile(join(dirname(entry), "persistence.js"), "utf8");
    expect(text).toContain(
      'this.db.exec("PRAGMA journal_mode = WAL");\n        this.db.exec("PRAGMA synchronous = NORMAL");',
    );
  });

  test("a message not deleted survives a restart, a deleted one does not", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "workcell-fauxqs-"));
    dirs.push(dataDir);
    const first = await started(dataDir);
    try {
      for (const body of ["kept", "deleted"]) {
        await first.sqs.send(
          new SendMessageCommand({ QueueUrl: first.queueUrl, MessageBody: body }),
        );
      }
      const received = await first.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: first.queueUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 0,
        }),
      );
      const deleted = received.Messages?.find((m) => m.Body === "deleted");
      expect(deleted?.ReceiptHandle).toBeDefined();
      await first.sqs.send(
        new DeleteMessageCommand({
          QueueUrl: first.queueUrl,
          ReceiptHandle: deleted?.ReceiptHandle,
        }),
      );
    } finally {
      await first.fauxqs.stop();
    }
    // The database is still in WAL mode (a property of the file, unlike `synchronous`).
    const db = new DatabaseSync(join(dataDir, "fauxqs.db"), { readOnly: true });
    expect(db.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
    db.close();

    const second = await started(dataDir);
    try {
      const again = await second.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: second.queueUrl, MaxNumberOfMessages: 10 }),
      );
      expect((again.Messages ?? []).map((m) => m.Body)).toEqual(["kept"]);
    } finally {
      await second.fauxqs.stop();
    }
  });
});
