// The egress proxy in a process of its own, for tests that must give it a resolver other
// than the node's (dns-rebinding.test.ts runs it in a mount namespace whose
// /etc/resolv.conf names a fake DNS server). Args: a JSON {dir, allow}. Prints {path} once
// listening, then one {audit} line per connection; exits when stdin closes.
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createAddressGuard } from "../../../../agent-host/egress/address-guard.ts";
import { createEgressProxy } from "../../../../agent-host/egress/egress-proxy.ts";

const args = JSON.parse(process.argv[2] ?? "{}") as { dir: string; allow: string[] };
const proxy = createEgressProxy({
  ceiling: async () => ({ mode: "allowlist", allow: args.allow }),
  guard: createAddressGuard(),
  audit: (record) => process.stdout.write(`${JSON.stringify({ audit: record })}\n`),
});
const opened = await proxy.open(
  {
    uid: "rebind",
    runId: "00000000-0000-4000-8000-000000000001",
    sandboxId: "rebind-1",
    generation: 1,
  },
  1e9,
  args.dir,
);
process.stdout.write(`${JSON.stringify({ path: join(args.dir, opened.relativePath) })}\n`);
createInterface({ input: process.stdin }).on("close", async () => {
  await proxy.close();
  process.exit(0);
});
