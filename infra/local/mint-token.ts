// `npm run token -- <uid> [--admin]`: prints a dev token for the local Workcell, signed
// with the secret in ./.data/secrets.json (created by the first `npm start`).
import { parseArgs } from "node:util";
import { mintDevToken } from "./dev-token.ts";
import { loadOrCreateLocalSecrets } from "./local-secrets.ts";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    admin: { type: "boolean", default: false },
    "data-dir": { type: "string", default: process.env.WORKCELL_DATA_DIR ?? ".data" },
  },
});
const uid = positionals[0];
if (!uid) {
  console.error("usage: npm run token -- <uid> [--admin] [--data-dir .data]");
  process.exit(2);
}
const secrets = await loadOrCreateLocalSecrets(values["data-dir"]);
console.log(await mintDevToken(secrets.devJwtSecret, uid, { admin: values.admin }));
