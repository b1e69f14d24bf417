// `npm run secrets:ca -- <dir>`: makes a deployment's secrets material once, at install
// (decision 0133): the secrets key (set it as WORKCELL_SECRETS_KEY on the API and every
// agent-host) and the CA (certificate and private key: agent-host nodes only). Existing
// files are kept, so running it again changes nothing.
import { join } from "node:path";
import {
  loadOrCreateSecretsMaterial,
  MATERIAL_FILES,
} from "../agent-host/secrets/secrets-material.ts";

const dir = process.argv[2];
if (dir === undefined) {
  process.stderr.write("usage: npm run secrets:ca -- <directory>\n");
  process.exit(2);
}
await loadOrCreateSecretsMaterial(dir);
process.stdout.write(
  [
    `WORKCELL_SECRETS_KEY=$(cat ${join(dir, MATERIAL_FILES.key)})   # API and every agent-host`,
    `WORKCELL_SECRETS_CA_CERT=${join(dir, MATERIAL_FILES.caCert)}     # agent-hosts`,
    `WORKCELL_SECRETS_CA_KEY=${join(dir, MATERIAL_FILES.caKey)}       # agent-hosts only, 0600`,
    "",
  ].join("\n"),
);
