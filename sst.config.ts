/// <reference path="./.sst/platform/config.d.ts" />
// Cloud deployment with SST v3 (ARCHITECTURE.md §8). `npx sst deploy --stage <name>`
// generates .sst/platform (its types) on first use; this file is excluded from the
// repository's type-check because those types only exist after `sst install`.
//
// Declared here: the API (Lambda + HTTPS via a Function URL / API Gateway v2), the run
// queue with its dead-letter queue, the attachments bucket with CORS for presigned PUT
// from the SPA, and Postgres. agent-host nodes are installed by infra/agent-host/ and
// share one POSIX filesystem (EFS/NFS) for UserWorkspaces and projections.
export default $config({
  app(input) {
    return {
      name: "workcell",
      removal: input?.stage === "production" ? "retain" : "remove",
      home: "aws",
    };
  },
  async run() {
    const spaOrigin = process.env.WORKCELL_SPA_ORIGIN ?? "http://localhost:5173";

    const deadLetters = new sst.aws.Queue("RunsDlq");
    const runs = new sst.aws.Queue("Runs", {
      dlq: { queue: deadLetters.arn, retry: 5 },
      visibilityTimeout: "5 minutes",
    });

    const attachments = new sst.aws.Bucket("Attachments", {
      cors: {
        allowOrigins: [spaOrigin],
        allowMethods: ["PUT"],
        allowHeaders: ["content-type", "content-length"],
        maxAge: "1 hour",
      },
    });
    // Temporary uploads are also swept by the API itself (24 h); the lifecycle rule is
    // the backstop for groups whose owner never comes back.
    new aws.s3.BucketLifecycleConfigurationV2("AttachmentsTmpExpiry", {
      bucket: attachments.name,
      rules: [
        { id: "tmp", status: "Enabled", filter: { prefix: "tmp/" }, expiration: { days: 2 } },
      ],
    });

    const vpc = new sst.aws.Vpc("Vpc", { nat: "ec2" });
    const database = new sst.aws.Postgres("Database", { vpc });
    const databaseUrl = $interpolate`postgres://${database.username}:${database.password}@${database.host}:${database.port}/${database.database}`;
    // Signs data-plane capabilities (Ed25519 private JWK); agent-hosts get the public half
    // in their CAPABILITY_PUBLIC_KEY. `npx sst secret set CapabilityPrivateKey '<jwk>'`.
    const capabilityKey = new sst.Secret("CapabilityPrivateKey");

    const api = new sst.aws.Function("Api", {
      handler: "functions/entry/lambda.handler",
      runtime: "nodejs24.x",
      url: true,
      vpc,
      link: [runs, attachments, database],
      environment: {
        DATABASE_URL: databaseUrl,
        CAPABILITY_PRIVATE_KEY: capabilityKey.value,
        AUTH_MODE: "oidc",
        RUN_QUEUE_URL: runs.url,
        ATTACHMENTS_BUCKET: attachments.name,
        OIDC_ISSUER: process.env.WORKCELL_OIDC_ISSUER ?? "",
        OIDC_AUDIENCE: process.env.WORKCELL_OIDC_AUDIENCE ?? "",
        OIDC_JWKS_URL: process.env.WORKCELL_OIDC_JWKS_URL ?? "",
        DATA_PLANE_URL: process.env.WORKCELL_DATA_PLANE_URL ?? "",
      },
    });

    // The sweeper ends runs whose node died (node_lost) and re-sends runs left pending
    // (lost message, crashed publisher); functions/runs/sweep-runs.ts.
    new sst.aws.Cron("DispatchSweeper", {
      schedule: "rate(1 minute)",
      function: {
        handler: "functions/entry/sweeper.handler",
        runtime: "nodejs24.x",
        vpc,
        link: [runs, database],
        environment: {
          DATABASE_URL: databaseUrl,
          CAPABILITY_PRIVATE_KEY: capabilityKey.value,
          RUN_QUEUE_URL: runs.url,
          ATTACHMENTS_BUCKET: attachments.name,
          AUTH_MODE: "oidc",
          OIDC_ISSUER: process.env.WORKCELL_OIDC_ISSUER ?? "",
          OIDC_AUDIENCE: process.env.WORKCELL_OIDC_AUDIENCE ?? "",
          OIDC_JWKS_URL: process.env.WORKCELL_OIDC_JWKS_URL ?? "",
          DATA_PLANE_URL: process.env.WORKCELL_DATA_PLANE_URL ?? "",
        },
      },
    });

    return {
      api: api.url,
      runQueue: runs.url,
      runDlq: deadLetters.url,
      attachmentsBucket: attachments.name,
    };
  },
});
