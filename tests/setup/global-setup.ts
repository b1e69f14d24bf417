import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import Docker from "dockerode";
import { startFauxqs } from "fauxqs";
import type { TestProject } from "vitest/node";
import { type PostgresCluster, startPostgresCluster } from "./postgres-cluster.ts";
import { prepareTemplateDatabase, templateDatabaseName } from "./template-database.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser URL of this run's throw-away cluster, or "" with pgError set. */
    pgAdminUrl: string;
    pgTemplateDb: string;
    pgError: string;
    /** fauxqs (SQS + S3 on one endpoint). */
    awsEndpoint: string;
    /** The offline sandbox image, or "" with dockerError set. */
    sandboxImage: string;
    dockerError: string;
  }
}

/**
 * Boots each real part once per test run and hands tests the coordinates (docs/testing.md).
 * A part that cannot be had is not fatal here: it is recorded, and only the tests that
 * need it fail, with a message naming the part and how to get it (tests/support/).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stops: Array<() => Promise<void>> = [];

  let cluster: PostgresCluster | undefined;
  try {
    cluster = await startPostgresCluster();
    stops.push(cluster.stop);
    await prepareTemplateDatabase(cluster.adminUrl);
    project.provide("pgAdminUrl", cluster.adminUrl);
    project.provide("pgError", "");
  } catch (error) {
    project.provide("pgAdminUrl", "");
    project.provide("pgError", `PostgreSQL: ${(error as Error).message}`);
  }
  project.provide("pgTemplateDb", templateDatabaseName);

  const fauxqs = await startFauxqs({ port: 0, logger: false });
  stops.push(() => fauxqs.stop());
  project.provide("awsEndpoint", fauxqs.address);

  // The process tier's exec shim (decision 0088), from this checkout's source: preflight
  // reports the tier unavailable, naming the fix, when it cannot be built here.
  await promisify(execFile)(
    "bash",
    [new URL("../../scripts/build-exec-shim.sh", import.meta.url).pathname],
    {
      timeout: 120_000,
    },
  ).catch((error: Error) => console.warn(`exec shim not built: ${error.message}`));

  const image = await sandboxImageStatus();
  project.provide("sandboxImage", image.ok ? image.name : "");
  project.provide("dockerError", image.ok ? "" : image.error);

  return async () => {
    for (const stop of stops.reverse()) await stop();
  };
}

async function sandboxImageStatus(): Promise<
  { ok: true; name: string } | { ok: false; error: string }
> {
  const spec = JSON.parse(
    await readFile(new URL("../../infra/sandbox-image/test-image.json", import.meta.url), "utf8"),
  ) as { name: string };
  const docker = new Docker();
  try {
    await docker.ping();
  } catch (error) {
    return {
      ok: false,
      error: `Docker engine does not answer on /var/run/docker.sock (${(error as Error).message}): run scripts/ensure-system.sh as root`,
    };
  }
  try {
    await docker.getImage(spec.name).inspect();
  } catch {
    return {
      ok: false,
      error: `sandbox test image ${spec.name} is missing: run infra/sandbox-image/build-test-image.sh`,
    };
  }
  return { ok: true, name: spec.name };
}
