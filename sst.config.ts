/// <reference path="./.sst/platform/config.d.ts" />
// Cloud deployment with SST (docs/architecture.md §8, docs/deploy/aws.md). Type-checked in the
// test command against the platform types shipped inside SST's own npm package
// (infra/sst/typecheck.sh; no provider is downloaded).
//
// Order of a deploy: settings validated (a missing one fails here, before any resource) →
// data stores → the migrator function → its invocation (migrations applied, or the deploy
// fails on a database newer than the code) → the API, whose configuration depends on the
// invocation's result, so a new API version never serves before the migrations ran.
// The agent-host nodes (shared filesystem, Auto Scaling group, data-plane load balancer,
// drain on termination) are declared in infra/sst/cluster/ and wired at the end of run():
// docs/decisions/0107, 0108.
export default $config({
  app(input) {
    return {
      name: "workcell",
      removal: input?.stage === "production" ? "retain" : "remove",
      protect: input?.stage === "production",
      home: "aws",
    };
  },
  async run() {
    const { deploySettings } = await import("./infra/sst/deploy-settings.ts");
    const { migrationsFingerprint } = await import("./infra/sst/migrations-fingerprint.ts");
    const { parseEnv } = await import("./shared/env/parse-env.ts");
    const { ed25519PrivateJwkVar } = await import("./shared/env/env-vars.ts");
    const { z } = await import("zod");
    const timeouts = await import("./functions/entry/lambda-timeouts.ts");
    const { buildAgentHostRelease } = await import("./infra/sst/agent-host-release.ts");
    const { capabilityPublicJwk, renderAgentHostEnv } = await import(
      "./infra/sst/agent-host-env-file.ts"
    );
    const { NODE_DATA_ROOT, NODE_SECRETS_CA_CERT, NODE_SECRETS_CA_KEY } = await import(
      "./infra/sst/node-user-data.ts"
    );
    const { agentHostCluster } = await import("./infra/sst/cluster/agent-host-cluster.ts");
    const { drainTrigger } = await import("./infra/sst/cluster/drain-trigger.ts");
    const { DATA_PLANE_PORT } = await import("./infra/sst/cluster/cluster-deps.ts");
    const { secretsKey, SECRETS_KEY_ACTIONS } = await import("./infra/sst/cluster/secrets-key.ts");
    const { checkDeploymentCaPems } = await import("./infra/sst/secrets-ca-settings.ts");
    const settings = deploySettings(process.env);
    // The nodes' code, built before any resource so a failing build fails the deploy early.
    const release = buildAgentHostRelease(process.cwd(), ".sst/agent-host-release");

    // Two zones (SST's default, written out): the shared filesystem gets a mount target
    // in each private subnet, and their number must be known before the deploy.
    const zoneCount = 2;
    const vpc = new sst.aws.Vpc("Vpc", { nat: "ec2", az: zoneCount });
    const database = new sst.aws.Postgres("Database", { vpc });
    const databaseUrl = $interpolate`postgres://${database.username}:${database.password}@${database.host}:${database.port}/${database.database}`;

    // Signs data-plane capabilities; agent-hosts get the public half (CAPABILITY_PUBLIC_KEY).
    // `node infra/ops/main.ts keys generate --format json` makes a pair;
    // `npx sst secret set CapabilityPrivateKey '<private jwk>'` stores the private half.
    const capabilityKey = new sst.Secret("CapabilityPrivateKey");
    // Checked at deploy time with the functions' own parser: a missing, malformed or public
    // key fails the deploy (the message never contains the value).
    const capabilityPrivateKey = capabilityKey.value.apply((value) => {
      parseEnv(z.object({ CAPABILITY_PRIVATE_KEY: ed25519PrivateJwkVar() }), {
        CAPABILITY_PRIVATE_KEY: value,
      });
      return value;
    });

    // Users' secrets (docs/architecture.md §15, decision 0164): their data keys are sealed by
    // this KMS key (the API may only Encrypt, the nodes only Decrypt). The deployment CA
    // with which nodes terminate TLS towards hosts a secret binds is the operator's:
    // `npm run secrets:ca -- <dir>`, then `npx sst secret set SecretsCaCert "$(cat
    // <dir>/ca-cert.pem)"` and `npx sst secret set SecretsCaKey "$(cat <dir>/ca-key.pem)"`.
    // A missing or mismatched pair fails the deploy here (messages never hold the key).
    const valueKey = secretsKey(
      { aws, pulumi: $util },
      { aliasName: `alias/${$app.name}-${$app.stage}-secrets` },
    );
    const secretsCa = $resolve([
      new sst.Secret("SecretsCaCert").value,
      new sst.Secret("SecretsCaKey").value,
    ]).apply(([cert, key]) => checkDeploymentCaPems(cert, key));

    const deadLetters = new sst.aws.Queue("RunsDlq", { visibilityTimeout: "5 minutes" });
    const runs = new sst.aws.Queue("Runs", {
      dlq: { queue: deadLetters.arn, retry: 5 },
      // A worker claims a run in Postgres and keeps its lease there; the message only has
      // to stay invisible while the claim happens.
      visibilityTimeout: "5 minutes",
    });

    // The console (web/): a static site. Its /config.json is written after the API exists
    // (below), so the site does not depend on the API and the API can take the site's
    // origin for CORS without a cycle.
    const consoleSite = new sst.aws.StaticSite("Console", {
      path: ".",
      build: { command: "npm run build:web", output: "web/dist" },
      errorPage: "index.html",
      ...(settings.WORKCELL_CONSOLE_DOMAIN === undefined
        ? {}
        : { domain: settings.WORKCELL_CONSOLE_DOMAIN }),
    });
    const consoleOrigin =
      settings.WORKCELL_CONSOLE_DOMAIN === undefined
        ? consoleSite.url.apply((url) => new URL(url).origin)
        : $output(`https://${settings.WORKCELL_CONSOLE_DOMAIN}`);
    const extraOrigins = settings.WORKCELL_EXTRA_CORS_ORIGINS?.split(",") ?? [];
    const corsOrigins = consoleOrigin.apply((origin) => [origin, ...extraOrigins].join(","));

    const attachments = new sst.aws.Bucket("Attachments", {
      cors: {
        // Presigned PUT straight from the browser (docs/architecture.md §7).
        allowOrigins: [consoleOrigin, ...extraOrigins],
        allowMethods: ["PUT"],
        allowHeaders: ["content-type", "content-length"],
        maxAge: "1 hour",
      },
    });
    // Temporary uploads are also swept by the API itself (24 h); the lifecycle rule is the
    // backstop for groups whose owner never comes back.
    new aws.s3.BucketLifecycleConfiguration("AttachmentsTmpExpiry", {
      bucket: attachments.name,
      rules: [
        {
          id: "tmp",
          status: "Enabled",
          filter: { prefix: "tmp/" },
          expiration: { days: 2 },
          abortIncompleteMultipartUpload: { daysAfterInitiation: 1 },
        },
      ],
    });

    // The one-off migrator: the same migrator as the local mode and `workcell migrate`.
    const migrator = new sst.aws.Function("Migrator", {
      handler: "functions/entry/migrator.handler",
      runtime: "nodejs24.x",
      // Waiting for another migrator's lock plus applying (MIGRATE_BUDGET_MS), plus a
      // minute to connect and report.
      timeout: `${timeouts.MIGRATOR_TIMEOUT_SECONDS} seconds`,
      vpc,
      link: [database],
      copyFiles: [{ from: "shared/db/migrations", to: "migrations" }],
      environment: { DATABASE_URL: databaseUrl, MIGRATIONS_DIR: "/var/task/migrations" },
    });
    const migration = new aws.lambda.Invocation("Migrate", {
      functionName: migrator.name,
      input: JSON.stringify({}),
      // Re-run when the migrations or the migrator's code change. A failed invocation (a
      // database newer than this code, an unreachable database) fails the deploy.
      triggers: {
        migrations: migrationsFingerprint("shared/db/migrations"),
        code: migrator.nodes.function.sourceCodeHash,
      },
    });
    // The number of migrations the database has after the invocation; feeding it into the
    // API's environment makes the API's update wait for the migration.
    const schemaMigrations = migration.result.apply((result) => {
      const parsed = JSON.parse(result) as { ok?: boolean; total?: number };
      if (parsed.ok !== true) throw new Error(`the migrator did not succeed: ${result}`);
      return String(parsed.total);
    });

    const functionsEnv = {
      DATABASE_URL: databaseUrl,
      CAPABILITY_PRIVATE_KEY: capabilityPrivateKey,
      AUTH_MODE: "oidc",
      OIDC_ISSUER: settings.WORKCELL_OIDC_ISSUER,
      OIDC_AUDIENCE: settings.WORKCELL_OIDC_AUDIENCE,
      OIDC_JWKS_URL: settings.WORKCELL_OIDC_JWKS_URL,
      DATA_PLANE_URL: settings.WORKCELL_DATA_PLANE_URL,
      RUN_QUEUE_URL: runs.url,
      ATTACHMENTS_BUCKET: attachments.name,
      WORKCELL_CORS_ORIGINS: corsOrigins,
      ...(settings.WORKCELL_ADMIN_CLAIM === undefined
        ? {}
        : { ADMIN_CLAIM: settings.WORKCELL_ADMIN_CLAIM }),
    };

    const api = new sst.aws.Function("Api", {
      handler: "functions/entry/lambda.handler",
      runtime: "nodejs24.x",
      // A Function URL in RESPONSE_STREAM mode: the event stream reaches the client as
      // events are written (functions/entry/lambda.ts streams with Hono's streamHandle).
      streaming: true,
      url: true,
      // The event-stream window (LAMBDA_EVENT_STREAM_MAX_MS, 5 min) plus 30 s to send the
      // last frame; other requests end long before on their own I/O timeouts.
      timeout: `${timeouts.API_TIMEOUT_SECONDS} seconds`,
      vpc,
      link: [runs, attachments, database],
      environment: {
        ...functionsEnv,
        WORKCELL_SCHEMA_MIGRATIONS: schemaMigrations,
        WORKCELL_SECRETS_KMS_KEY_ID: valueKey.key.arn,
      },
      permissions: [{ actions: [...SECRETS_KEY_ACTIONS.api], resources: [valueKey.key.arn] }],
    });

    // What the console reads at start (web/src/auth/console-config.ts). The site creates
    // its own assets bucket (no `assets.bucket` given), so it is always there.
    const consoleAssets = consoleSite.nodes.assets;
    if (consoleAssets === undefined) throw new Error("the console site has no assets bucket");
    new aws.s3.BucketObjectv2("ConsoleConfig", {
      bucket: consoleAssets.name,
      key: "config.json",
      contentType: "application/json",
      cacheControl: "no-cache",
      content: api.url.apply((url) =>
        JSON.stringify({
          mode: "oidc",
          api_base_url: url.replace(/\/$/, ""),
          oidc: {
            authority: settings.WORKCELL_OIDC_ISSUER,
            client_id: settings.WORKCELL_OIDC_CLIENT_ID ?? settings.WORKCELL_OIDC_AUDIENCE,
            scope: "openid profile",
          },
        }),
      ),
    });

    // The sweeper ends runs whose node died (node_lost) and re-sends runs left pending
    // (lost message, crashed publisher); functions/runs/sweep-runs.ts.
    new sst.aws.CronV2("DispatchSweeper", {
      schedule: "rate(1 minute)",
      // The next minute's sweep does the same work: no retries piling up behind it.
      retries: 0,
      function: {
        handler: "functions/entry/sweeper.handler",
        runtime: "nodejs24.x",
        // One sweep's budget (SWEEP_BUDGET_MS, 50 s) plus 10 s; below its 1-minute period.
        timeout: `${timeouts.SWEEPER_TIMEOUT_SECONDS} seconds`,
        vpc,
        link: [runs, database],
        environment: { ...functionsEnv, WORKCELL_SCHEMA_MIGRATIONS: schemaMigrations },
      },
    });

    // A message in the DLQ is a run that could not be dispatched or a poison message:
    // someone must look. Alarm on any visible message, checked every 5 minutes.
    const alarms = new sst.aws.SnsTopic("Alarms");
    if (settings.WORKCELL_ALARM_EMAIL !== undefined) {
      new aws.sns.TopicSubscription("AlarmsEmail", {
        topic: alarms.arn,
        protocol: "email",
        endpoint: settings.WORKCELL_ALARM_EMAIL,
      });
    }
    new aws.cloudwatch.MetricAlarm("RunsDlqDepth", {
      alarmDescription: "Messages in the Workcell run dead-letter queue (docs/deploy/aws.md)",
      namespace: "AWS/SQS",
      metricName: "ApproximateNumberOfMessagesVisible",
      dimensions: { QueueName: deadLetters.nodes.queue.name },
      statistic: "Maximum",
      period: 300,
      evaluationPeriods: 1,
      threshold: 0,
      comparisonOperator: "GreaterThanThreshold",
      treatMissingData: "notBreaching",
      alarmActions: [alarms.arn],
      okActions: [alarms.arn],
    });

    // The agent-host nodes. Their env file holds the database password, so it is a
    // SecureString parameter the nodes read with their role, never part of user data.
    const region = aws.getRegionOutput().region;
    // The model server's bearer token, when the settings say it has one:
    // `npx sst secret set ModelApiKey <key>`.
    const modelApiKey =
      settings.WORKCELL_MODEL_API_KEY === "secret"
        ? $output(new sst.Secret("ModelApiKey").value).apply((key): string | undefined => key)
        : $output<string | undefined>(undefined);
    const envFile = $resolve([
      databaseUrl,
      runs.url,
      deadLetters.url,
      attachments.name,
      region,
      capabilityKey.value,
      corsOrigins,
      valueKey.key.arn,
    ]).apply(
      ([dbUrl, runQueueUrl, dlqUrl, bucket, awsRegion, privateKey, origins, secretsKeyArn]) =>
        modelApiKey.apply((modelKey) =>
          renderAgentHostEnv({
            DATABASE_URL: dbUrl,
            DATA_ROOT: NODE_DATA_ROOT,
            RUN_QUEUE_URL: runQueueUrl,
            RUN_DLQ_URL: dlqUrl,
            ATTACHMENTS_BUCKET: bucket,
            AWS_REGION: awsRegion,
            CAPABILITY_PUBLIC_KEY: capabilityPublicJwk(privateKey),
            DATA_PLANE_PORT: String(DATA_PLANE_PORT),
            DATA_PLANE_PUBLIC_URL: settings.WORKCELL_DATA_PLANE_URL,
            DATA_PLANE_CORS_ORIGINS: origins,
            MODEL_BASE_URL: settings.WORKCELL_MODEL_BASE_URL,
            MODEL_NAME: settings.WORKCELL_MODEL_NAME,
            MODEL_API_KEY: modelKey,
            WORKCELL_SECRETS_KMS_KEY_ID: secretsKeyArn,
            WORKCELL_SECRETS_CA_CERT: NODE_SECRETS_CA_CERT,
            WORKCELL_SECRETS_CA_KEY: NODE_SECRETS_CA_KEY,
          }),
        ),
    );
    const releases = new sst.aws.Bucket("Releases");
    const cluster = agentHostCluster(
      { aws, pulumi: $util },
      {
        region,
        parameterPrefix: `/${$app.name}/${$app.stage}`,
        vpc: {
          id: vpc.id,
          cidrBlock: vpc.nodes.vpc.cidrBlock,
          privateSubnets: $output(vpc.privateSubnets),
          publicSubnets: $output(vpc.publicSubnets),
          zoneCount,
        },
        runQueueArn: runs.arn,
        runDlqArn: deadLetters.arn,
        attachmentsBucketArn: attachments.arn,
        releaseBucket: { name: releases.name, arn: releases.arn },
        release,
        envFile,
        secrets: {
          kmsKeyArn: valueKey.key.arn,
          caCertPem: secretsCa.certPem,
          caKeyPem: $util.secret(secretsCa.keyPem),
        },
        settings,
      },
    );
    // Quiesce and drain a node before the group ends it (functions/nodes/drain-node.ts).
    const drainBudgetSeconds = settings.WORKCELL_NODE_DRAIN_MINUTES * 60;
    const drainer = new sst.aws.Function("NodeDrainer", {
      handler: "functions/entry/node-drainer.handler",
      runtime: "nodejs24.x",
      timeout: `${timeouts.nodeDrainerTimeoutSeconds(drainBudgetSeconds)} seconds`,
      vpc,
      link: [database],
      environment: {
        DATABASE_URL: databaseUrl,
        NODE_DRAIN_BUDGET_SECONDS: String(drainBudgetSeconds),
      },
      permissions: [
        {
          actions: ["autoscaling:CompleteLifecycleAction"],
          resources: [cluster.nodes.group.arn],
        },
      ],
    });
    drainTrigger(
      { aws, pulumi: $util },
      { groupName: cluster.nodes.group.name, drainerArn: drainer.arn, drainerName: drainer.name },
    );

    return {
      api: api.url,
      console: consoleOrigin,
      runQueue: runs.url,
      runDlq: deadLetters.url,
      attachmentsBucket: attachments.name,
      databaseHost: database.host,
      alarmsTopic: alarms.arn,
      // Point the DNS name of WORKCELL_DATA_PLANE_URL at this (CNAME or alias).
      dataPlaneLoadBalancer: cluster.alb.loadBalancer.dnsName,
      nodeGroup: cluster.nodes.group.name,
      sharedFilesystem: cluster.fs.fileSystem.id,
      agentHostRelease: release.sha256,
      valueKeyArn: valueKey.key.arn,
    };
  },
});
