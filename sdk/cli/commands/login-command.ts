import { Workcell } from "../../src/index.ts";
import { type CliContext, EXIT, output, UsageError } from "../cli-context.ts";

/**
 * `workcell login --url <api> --token <token>` (or WORKCELL_TOKEN): checks the token
 * against the API (one authenticated call) before storing anything.
 */
export async function loginCommand(ctx: CliContext): Promise<number> {
  const url =
    (typeof ctx.flags.url === "string" ? ctx.flags.url : undefined) ||
    ctx.io.env.WORKCELL_BASE_URL ||
    ctx.config.base_url;
  const token =
    (typeof ctx.flags.token === "string" ? ctx.flags.token : undefined) ||
    ctx.io.env.WORKCELL_TOKEN;
  if (url === undefined || token === undefined) {
    throw new UsageError("usage: workcell login --url <api base url> --token <token>");
  }
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
