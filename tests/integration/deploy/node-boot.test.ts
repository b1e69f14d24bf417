import { execFile } from "node:child_process";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { buildAgentHostRelease } from "../../../infra/sst/agent-host-release.ts";
import { type NodeUserDataInput, renderNodeUserData } from "../../../infra/sst/node-user-data.ts";

// A node's first boot (infra/sst/node-user-data.ts) run for real: the rendered script, as
// root, in a bubblewrap root of this machine's /usr with a fresh /etc, /var/log, /srv and
// /opt, and a release tarball built by buildAgentHostRelease. What exists only on EC2 is
// stood in by recorders first on PATH: `aws` (s3 cp from a folder, ssm get-parameter from
// a file), `curl` (IMDSv2: token, instance id), `apt-get`, `systemctl`, and the release's
// own install.sh (the real one runs in agent-host-install.test.ts).

const run = promisify(execFile);
const DB_PASSWORD = "Boot-t1me-s3cret-pa55";
const INSTANCE = "i-0123456789abcdef0";
const PARAMETER = "/workcell/test/agent-host.env";
const CA_CERT_PARAMETER = "/workcell/test/secrets-ca-cert.pem";
const CA_KEY_PARAMETER = "/workcell/test/secrets-ca-key.pem";
const CA_CERT = "-----BEGIN CERTIFICATE-----\nQ0EgY2VydA==\n-----END CERTIFICATE-----";
const CA_KEY = "-----BEGIN PRIVATE KEY-----\nQm9vdC1jYS1rZXktc2VjcmV0\n-----END PRIVATE KEY-----";
const ENV_BODY = `DATABASE_URL='postgres://workcell:${DB_PASSWORD}@db.internal:5432/workcell'\nDATA_ROOT='/srv/workcell'\n`;

let work: string;
let stubs: string;
let release: { file: string; sha256: string; key: string };
/** A valid release of other code: what a tampered bucket object would be. */
let other: { file: string; sha256: string; key: string };

const STUBS: Record<string, string> = {
  "apt-get": `echo "apt-get $*" >>/record/calls`,
  systemctl: `echo "systemctl $*" >>/record/calls`,
  curl: `case "$*" in
  *api/token*) echo token-abc ;;
  *meta-data/instance-id*) echo ${INSTANCE} ;;
  *) echo "unexpected curl $*" >&2; exit 22 ;;
esac`,
  aws: `echo "aws $*" >>/record/calls
if [ "$1 $2" = "s3 cp" ]; then
  for a in "$@"; do case "$a" in s3://*) src="\${a#s3://}" ;; esac; done
  cp "/fake-s3/$src" "\${@: -1}"
elif [ "$1 $2" = "ssm get-parameter" ]; then
  [ -f /fake-ssm/fail ] && { echo "AccessDeniedException" >&2; exit 254; }
  name=""; prev=""
  for a in "$@"; do [ "$prev" = "--name" ] && name="$a"; prev="$a"; done
  cat "/fake-ssm/$(basename "$name")"
else
  exit 2
fi`,
};

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "node-boot-"));
  stubs = join(work, "stubs");
  await mkdir(stubs);
  for (const [name, body] of Object.entries(STUBS)) {
    await writeFile(join(stubs, name), `#!/bin/bash\nset -euo pipefail\n${body}\n`);
    await chmod(join(stubs, name), 0o755);
  }
  // The release: a checkout whose install.sh records where it ran from and as whom.
  const checkout = join(work, "checkout");
  await mkdir(join(checkout, "infra/agent-host"), { recursive: true });
  await writeFile(
    join(checkout, "infra/agent-host/install.sh"),
    '#!/bin/bash\nset -euo pipefail\necho "install.sh from $(cd "$(dirname "$0")/../.." && pwd) uid $(id -u)" >>/record/calls\nmkdir -p /etc/workcell\n',
  );
  await chmod(join(checkout, "infra/agent-host/install.sh"), 0o755);
  release = buildAgentHostRelease(checkout, join(work, "release"));
  await writeFile(
    join(checkout, "infra/agent-host/install.sh"),
    '#!/bin/bash\necho "install.sh of other code" >>/record/calls\nmkdir -p /etc/workcell\n',
  );
  other = buildAgentHostRelease(checkout, join(work, "other"));
}, 60_000);
afterAll(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

type Boot = {
  code: number;
  calls: string[];
  log: string;
  fstab: string;
  etc: string;
  stdout: string;
};

/** One boot in a fresh root; `tamper` changes the stored release, `ssmFails` the parameter read. */
async function boot(opts: { tamper?: boolean; ssmFails?: boolean } = {}): Promise<Boot> {
  const root = await mkdtemp(join(work, "root-"));
  const dirs = ["record", "log", "etc-workcell", "srv", "s3/releases/agent-host", "ssm", "opt-bin"];
  for (const d of dirs) await mkdir(join(root, d), { recursive: true });
  await writeFile(join(root, "record/calls"), "");
  await writeFile(join(root, "fstab"), "# fresh\n");
  // Tampered: well-formed release bytes of other code under this deploy's key.
  await writeFile(
    join(root, "s3/releases", release.key),
    await readFile(opts.tamper ? other.file : release.file),
  );
  await writeFile(join(root, "ssm/agent-host.env"), ENV_BODY);
  await writeFile(join(root, "ssm/secrets-ca-cert.pem"), `${CA_CERT}\n`);
  await writeFile(join(root, "ssm/secrets-ca-key.pem"), `${CA_KEY}\n`);
  if (opts.ssmFails) await writeFile(join(root, "ssm/fail"), "");
  await writeFile(join(root, "opt-bin/node"), '#!/bin/bash\necho "doctor $*" >>/record/calls\n');
  await chmod(join(root, "opt-bin/node"), 0o755);
  const input: NodeUserDataInput = {
    region: "eu-west-1",
    releaseBucket: "releases",
    releaseKey: release.key,
    releaseSha256: release.sha256,
    fileSystemId: "fs-0123abcd",
    envParameterName: PARAMETER,
    secretsCaCertParameterName: CA_CERT_PARAMETER,
    secretsCaKeyParameterName: CA_KEY_PARAMETER,
  };
  await writeFile(join(root, "user-data"), renderNodeUserData(input));
  const args = [
    // A clean environment: only PATH, set below.
    "--clearenv",
    "--unshare-all",
    "--die-with-parent",
    "--ro-bind",
    "/usr",
    "/usr",
    "--symlink",
    "usr/bin",
    "/bin",
    "--symlink",
    "usr/sbin",
    "/sbin",
    "--symlink",
    "usr/lib",
    "/lib",
    "--symlink",
    "usr/lib64",
    "/lib64",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    "--dir",
    "/etc",
    "--ro-bind",
    "/etc/passwd",
    "/etc/passwd",
    "--ro-bind",
    "/etc/group",
    "/etc/group",
    "--bind",
    join(root, "fstab"),
    "/etc/fstab",
    "--bind",
    join(root, "etc-workcell"),
    "/etc/workcell",
    "--bind",
    join(root, "log"),
    "/var/log",
    "--bind",
    join(root, "srv"),
    "/srv/workcell",
    "--ro-bind",
    join(root, "opt-bin"),
    "/opt/workcell/.tools/bin",
    "--ro-bind",
    join(root, "s3"),
    "/fake-s3",
    "--ro-bind",
    join(root, "ssm"),
    "/fake-ssm",
    "--bind",
    join(root, "record"),
    "/record",
    "--ro-bind",
    stubs,
    "/stubs",
    "--ro-bind",
    join(root, "user-data"),
    "/user-data",
    "--setenv",
    "PATH",
    "/stubs:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
  ];
  const { code, stdout } = await run("bwrap", [...args, "bash", "/user-data"], {
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (e: { code?: number; stdout?: string }) => ({ code: e.code ?? -1, stdout: e.stdout ?? "" }),
  );
  return {
    code,
    stdout,
    calls: (await readFile(join(root, "record/calls"), "utf8")).split("\n").filter(Boolean),
    log: await readFile(join(root, "log/workcell-node-boot.log"), "utf8").catch(() => ""),
    fstab: await readFile(join(root, "fstab"), "utf8"),
    etc: join(root, "etc-workcell"),
  };
}

describe("node first boot", () => {
  test("installs the verified release, writes the env file from SSM with the node id, starts the service", async () => {
    const b = await boot();
    expect(b.code, b.log).toBe(0);
    expect(b.calls[0]).toBe("apt-get update -qq");
    expect(b.calls[1]).toMatch(/^apt-get install .*awscli nfs-common/);
    expect(b.calls.filter((c) => c.startsWith("aws s3 "))).toEqual([
      expect.stringMatching(
        new RegExp(
          `^aws s3 cp --only-show-errors --region eu-west-1 s3://releases/${release.key} /tmp/tmp\\.\\w+/release\\.tar\\.gz$`,
        ),
      ),
    ]);
    expect(b.calls.filter((c) => c.startsWith("aws ssm "))).toEqual([
      `aws ssm get-parameter --region eu-west-1 --name ${PARAMETER} --with-decryption --query Parameter.Value --output text`,
      `aws ssm get-parameter --region eu-west-1 --name ${CA_CERT_PARAMETER} --query Parameter.Value --output text`,
      `aws ssm get-parameter --region eu-west-1 --name ${CA_KEY_PARAMETER} --with-decryption --query Parameter.Value --output text`,
    ]);
    const installed = b.calls.find((c) => c.startsWith("install.sh from "));
    expect(installed).toMatch(/^install\.sh from \/tmp\/tmp\.\w+\/release uid 0$/);
    expect(b.calls.at(-2)).toBe(
      "doctor /opt/workcell/infra/ops/main.ts doctor --env-file /etc/workcell/agent-host.env",
    );
    expect(b.calls.at(-1)).toBe("systemctl enable --now workcell-agent-host");
    expect(b.fstab).toContain(
      "fs-0123abcd.efs.eu-west-1.amazonaws.com:/ /srv/workcell nfs4 nfsvers=4.1,hard,",
    );
    const envFile = join(b.etc, "agent-host.env");
    expect(await readFile(envFile, "utf8")).toBe(`${ENV_BODY}NODE_ID=${INSTANCE}\n`);
    expect((await stat(envFile)).mode & 0o777).toBe(0o600);
    // The deployment CA (decision 0164): where the env file's WORKCELL_SECRETS_CA_* point,
    // the key 0600 in a 0700 directory, neither left as a .new file.
    const caDir = join(b.etc, "secrets");
    expect(await readFile(join(caDir, "ca-cert.pem"), "utf8")).toBe(`${CA_CERT}\n`);
    expect(await readFile(join(caDir, "ca-key.pem"), "utf8")).toBe(`${CA_KEY}\n`);
    expect((await stat(join(caDir, "ca-key.pem"))).mode & 0o777).toBe(0o600);
    expect((await stat(join(caDir, "ca-cert.pem"))).mode & 0o777).toBe(0o644);
    expect((await stat(caDir)).mode & 0o777).toBe(0o700);
    expect((await readdir(caDir)).sort()).toEqual(["ca-cert.pem", "ca-key.pem"]);
    expect(b.log).not.toContain("Qm9vdC1jYS1rZXktc2VjcmV0");
    expect(b.stdout).not.toContain("Qm9vdC1jYS1rZXktc2VjcmV0");
    expect(b.log).toContain(`done: node ${INSTANCE}`);
    // The boot log (kept on the node) never holds the env file's values.
    expect(b.log).not.toContain(DB_PASSWORD);
    expect(b.stdout).not.toContain(DB_PASSWORD);
  }, 90_000);

  test("a release whose bytes differ from the deploy's checksum is never installed", async () => {
    expect(other.sha256).not.toBe(release.sha256);
    const b = await boot({ tamper: true });
    expect(b.code).not.toBe(0);
    expect(b.log).toMatch(/FAILED|did NOT match/);
    expect(b.calls.some((c) => c.startsWith("install.sh"))).toBe(false);
    expect(b.calls.some((c) => c.startsWith("aws ssm"))).toBe(false);
    expect(b.calls.some((c) => c.startsWith("systemctl"))).toBe(false);
    await expect(stat(join(b.etc, "agent-host.env"))).rejects.toThrow(/ENOENT/);
  }, 90_000);

  test("an unreadable parameter leaves no env file and no service", async () => {
    const b = await boot({ ssmFails: true });
    expect(b.code).not.toBe(0);
    expect(b.calls.some((c) => c.startsWith("systemctl"))).toBe(false);
    await expect(stat(join(b.etc, "agent-host.env"))).rejects.toThrow(/ENOENT/);
  }, 90_000);
});
