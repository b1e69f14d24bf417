import type { LocalStack } from "./local-stack.ts";

/** What a newcomer needs after `npm start`: where it listens and how to talk to it. */
export function printBanner(p: { url: string; dataDir: string; stack: LocalStack }): void {
  const sandbox =
    p.stack.sandboxDriver.kind !== "none"
      ? `${p.stack.sandboxDriver.kind} tier (${p.stack.sandboxDriver.detail})`
      : `none: ${p.stack.sandboxDriver.detail}. Runs will be refused (no isolation available); Workcell never executes unsandboxed.`;
  const network =
    p.stack.egress === undefined
      ? "no egress proxy: sandboxes have no network"
      : p.stack.egress.ready
        ? `egress proxy ready (${p.stack.egress.detail}); give a user hosts: npx workcell admin network <uid> pypi.org`
        : `egress proxy not ready: ${p.stack.egress.detail}`;
  console.log(
    [
      "",
      "Workcell is running (local mode)",
      `  Console        ${p.url}/   (sign in: "continue as <uid>")`,
      `  API            ${p.url}   (try: curl ${p.url}/v1/healthz)`,
      `  OpenAPI        ${p.url}/openapi.json`,
      `  Dev token      npm run token -- <uid>   then: curl -H "Authorization: Bearer $TOKEN" ${p.url}/v1/projects`,
      `  Data plane     ${p.stack.dataPlaneUrl}   (Workdir files, with a capability from POST /v1/threads/{id}/files/access)`,
      `  SQS + S3       ${p.stack.awsEndpoint}   (fauxqs)`,
      `  Sandbox        ${sandbox}`,
      `  Network        ${network}`,
      `  Checkpoints    ${p.stack.checkpoints.mode} (${p.stack.checkpoints.detail}${p.stack.checkpoints.mode === "copy" ? "; before-run checkpoints are off unless a run asks" : ""})`,
      `  Data           ${p.dataDir}`,
      "  Stop           Ctrl-C (data is kept)",
      "",
    ].join("\n"),
  );
}
