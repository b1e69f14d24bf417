// `npm run token -- <uid> [--admin]`: prints a dev token for the local Workcell, signed
// with the secret in ./.data/secrets.json (created by the first `npm start`).
import { parseArgs } from "node:util";
import { mintDevToken } from "./dev-token.ts";
import { loadOrCreateLocalSecrets } from "./local-secrets.ts";

const USAGE = `usage: npm run token -- <uid> [--admin] [--data-dir .data]
  Prints a dev token for <uid>, signed with the local Workcell's secret (<data-dir>/secrets.json).
  --admin     the token carries the admin claim
  --data-dir  the local Workcell's data directory (default: $WORKCELL_DATA_DIR, then .data)
`;

/** Exit code: 0 printed, 1 the secret cannot be read or made, 2 a usage mistake. */
async function mintTokenCommand(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { positionals, values } = parsed;
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const uid = positionals[0];
  if (!uid) {
    process.stderr.write(USAGE);
    return 2;
  }
  try {
    const secrets = await loadOrCreateLocalSecrets(values["data-dir"]);
    process.stdout.write(
      `${await mintDevToken(secrets.devJwtSecret, uid, { admin: values.admin })}\n`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(
      `Cannot mint a token with the secret under ${values["data-dir"]}: ${(error as Error).message}\n` +
        "Start the local Workcell once (npm start) or pass --data-dir <its DATA_DIR>.\n",
    );
    return 1;
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      admin: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
      "data-dir": { type: "string", default: process.env.WORKCELL_DATA_DIR ?? ".data" },
    },
  });
}

process.exitCode = await mintTokenCommand(process.argv.slice(2));
