import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { type CliContext, EXIT, listOutput, output, table, UsageError } from "../cli-context.ts";

const USAGE =
  "usage: workcell files ls [dir] | cat <path> | put <local-file> <path> | rm <path>  [--thread <id>]";

/** `workcell files ...` on a thread's Workdir (default: the last run's thread). */
export async function filesCommand(ctx: CliContext): Promise<number> {
  const [sub, first, second] = ctx.args;
  const client = ctx.client();
  const thread = await client.threads.get(ctx.threadId(), { signal: ctx.signal });
  const signal = ctx.signal;
  switch (sub) {
    case "ls": {
      const items = await thread.files.list(first ?? "/", { signal });
      listOutput(
        ctx,
        { items },
        () =>
          table(items.map((e) => [e.type === "dir" ? "d" : "-", String(e.size), e.mtime, e.name])),
        `${first ?? "/"} is empty.`,
      );
      return EXIT.ok;
    }
    case "cat": {
      if (first === undefined) throw new UsageError(USAGE);
      const bytes = await thread.files.readBytes(first, { signal });
      // Bytes as they are (no --json wrapping): `files cat` is for pipes.
      ctx.io.stdout(new TextDecoder().decode(bytes));
      return EXIT.ok;
    }
    case "put": {
      if (first === undefined) throw new UsageError(USAGE);
      const target = second ?? basename(first);
      await thread.files.write(target, new Uint8Array(await readFile(first)), { signal });
      output(ctx, { path: target }, () => `wrote ${target}`);
      return EXIT.ok;
    }
    case "rm": {
      if (first === undefined) throw new UsageError(USAGE);
      await thread.files.delete(first, { signal });
      output(ctx, { deleted: first }, () => `deleted ${first}`);
      return EXIT.ok;
    }
    default:
      throw new UsageError(USAGE);
  }
}

/** `workcell attach <file>... [--thread <id>]`: attachments (presigned upload + confirm). */
export async function attachCommand(ctx: CliContext): Promise<number> {
  if (ctx.args.length === 0)
    throw new UsageError("usage: workcell attach <file>... [--thread <id>]");
  const client = ctx.client();
  const files = await Promise.all(
    ctx.args.map(async (path) => ({
      name: basename(path),
      data: new Uint8Array(await readFile(path)),
    })),
  );
  const items = await client.attachments.upload(ctx.threadId(), files, { signal: ctx.signal });
  output(ctx, { items }, () =>
    table(items.map((a) => [a.file_id, a.status, String(a.size), a.path])),
  );
  return EXIT.ok;
}
