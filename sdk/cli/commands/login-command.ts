import { hostname } from "node:os";
import { Workcell } from "../../src/index.ts";
import { type CliContext, EXIT, output, UsageError } from "../cli-context.ts";
import { deviceCodeToken } from "../device-login.ts";

const USAGE =
  "usage: workcell login --url <api base url> [--token <token> | --local <uid> | --issuer <oidc issuer> --client-id <id>]";
/** What the device flow's login mints: a PAT outlives the issuer's hour-long access token. */
const DEVICE_LOGIN_TOKEN_DAYS = 90;

/**
 * `workcell login --url <api>` with `--token` (or WORKCELL_TOKEN), `--local <uid>` (the
 * local Workcell mints a dev token), or the token pasted on standard input. Checks the
 * token against the API (one authenticated call) before storing anything (mode 0600).
 */
export async function loginCommand(ctx: CliContext): Promise<number> {
  const url =
    (typeof ctx.flags.url === "string" ? ctx.flags.url : undefined) ||
    ctx.io.env.WORKCELL_BASE_URL ||
    ctx.config.base_url;
  if (url === undefined) throw new UsageError(USAGE);
  const token =
    (typeof ctx.flags.token === "string" ? ctx.flags.token : undefined) ||
    ctx.io.env.WORKCELL_TOKEN ||
    (typeof ctx.flags.local === "string"
      ? await localDevToken(url, ctx.flags.local, ctx.flags.admin === true, ctx.signal)
      : typeof ctx.flags.issuer === "string"
        ? await deviceLoginToken(ctx, url, ctx.flags.issuer)
        : await pastedToken(ctx));
  const client = new Workcell({ baseUrl: url, token });
  await client.threads.list({ limit: 1, signal: ctx.signal });
  await ctx.remember({ base_url: client.baseUrl, token });
  output(
    ctx,
    { base_url: client.baseUrl, config: ctx.configFile },
    () => `logged in to ${client.baseUrl} (saved in ${ctx.configFile})`,
  );
  return EXIT.ok;
}

/** The first line of standard input: a PAT pasted at the prompt, or piped in by a script. */
async function pastedToken(ctx: CliContext): Promise<string> {
  const stdin = ctx.io.stdin;
  if (stdin === undefined) throw new UsageError(USAGE);
  if (stdin.isTTY) ctx.io.stderr("Paste your personal access token (wct_…), then Enter: ");
  const line = (await stdin.readLine()).trim();
  if (line === "") throw new UsageError(`No token given.\n${USAGE}`);
  return line;
}

/**
 * A local Workcell's dev token for `uid` (its /config.json names the endpoint); a
 * deployment with OIDC has none, and says to use a personal access token instead.
 */
async function localDevToken(
  url: string,
  uid: string,
  admin: boolean,
  signal: AbortSignal,
): Promise<string> {
  const base = url.replace(/\/+$/, "");
  const config = (await (
    await fetch(`${base}/config.json`, { signal })
  )
    .json()
    .catch(() => ({}))) as {
    dev_token_url?: string;
  };
  if (config.dev_token_url === undefined) {
    throw new UsageError(
      `${base} is not a local Workcell (it mints no dev tokens): create a personal access token in its console (Tokens) and pass it with --token.`,
    );
  }
  const res = await fetch(new URL(config.dev_token_url, `${base}/`), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ uid, admin }),
    signal,
  });
  const body = (await res.json().catch(() => ({}))) as {
    token?: string;
    error?: { message?: string };
  };
  if (!res.ok || body.token === undefined) {
    throw new Error(`The local Workcell refused a dev token: ${body.error?.message ?? res.status}`);
  }
  return body.token;
}

/**
 * `--issuer <url> --client-id <id>`: the OIDC device flow signs the person in; its access
 * token (valid for the issuer's lifetime, often an hour) then creates a personal access
 * token for this machine, which is what is stored (decision 0098).
 */
async function deviceLoginToken(ctx: CliContext, url: string, issuer: string): Promise<string> {
  const clientId = ctx.flags["client-id"];
  if (typeof clientId !== "string") throw new UsageError(`--issuer needs --client-id\n${USAGE}`);
  const signIn = await deviceCodeToken({
    issuer,
    clientId,
    tell: (text) => ctx.io.stderr(text),
    signal: ctx.signal,
  });
  const created = await new Workcell({ baseUrl: url, token: signIn }).tokens.create(
    `workcell CLI on ${hostname()}`,
    { scopes: ["runs", "files"], expiresInDays: DEVICE_LOGIN_TOKEN_DAYS, signal: ctx.signal },
  );
  ctx.io.stderr(
    `signed in; personal access token ${created.token_id} (runs, files; expires ${created.expires_at}) created for this machine\n`,
  );
  return created.token;
}
