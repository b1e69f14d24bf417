// The first-boot script of an agent-host node (EC2 user data), rendered at deploy time
// from names only: the bucket and key of the release, its checksum, the file system id and
// the SSM parameter that holds the env file. No value of the env file (the database
// password) is ever in it: user data is readable by anyone with ec2:DescribeInstanceAttribute
// and is kept in the launch template's versions.

/** Where a node mounts the shared filesystem; the unit's RequiresMountsFor names it. */
export const NODE_DATA_ROOT = "/srv/workcell";
/** EFS mount options (docs/deploy/nodes.md): NFS 4.1 so flock is held by the server. */
export const EFS_MOUNT_OPTIONS = "nfsvers=4.1,hard,timeo=600,retrans=2,noresvport,_netdev";
/** Where the first boot writes the deployment CA (WORKCELL_SECRETS_CA_CERT / _CA_KEY). */
export const NODE_SECRETS_CA_CERT = "/etc/workcell/secrets/ca-cert.pem";
export const NODE_SECRETS_CA_KEY = "/etc/workcell/secrets/ca-key.pem";
/** Where the first boot writes what it did, for `journalctl`-less debugging over SSM/console. */
export const NODE_BOOT_LOG = "/var/log/workcell-node-boot.log";

export type NodeUserDataInput = {
  region: string;
  releaseBucket: string;
  releaseKey: string;
  /** Hex SHA-256 of the release tarball: the node refuses any other bytes. */
  releaseSha256: string;
  fileSystemId: string;
  /** Name of the SecureString parameter whose value is the env file (renderAgentHostEnv). */
  envParameterName: string;
  /** The deployment CA's parameters: the certificate (String) and the key (SecureString). */
  secretsCaCertParameterName: string;
  secretsCaKeyParameterName: string;
};

// Every value ends up inside single quotes in a bash script; refuse anything that could
// leave them rather than escaping it (the values are AWS ids and names).
const SAFE = /^[A-Za-z0-9._\-/:]+$/;

function checked(input: NodeUserDataInput): NodeUserDataInput {
  for (const [name, value] of Object.entries(input)) {
    if (!SAFE.test(value)) throw new Error(`node user data: ${name} has unexpected characters`);
  }
  if (!/^[0-9a-f]{64}$/.test(input.releaseSha256)) {
    throw new Error("node user data: releaseSha256 must be 64 lowercase hex digits");
  }
  if (!/^fs-[0-9a-f]+$/.test(input.fileSystemId)) {
    throw new Error("node user data: fileSystemId must look like fs-0123abcd");
  }
  return input;
}

/**
 * The bash script cloud-init runs once, as root, on a fresh Debian 12 node: Debian's
 * awscli and nfs-common; the shared filesystem at NODE_DATA_ROOT (fstab, retried while
 * the mount target's DNS name appears); the release from S3, checksum-verified, installed
 * by its own infra/agent-host/install.sh; the env file from SSM (0600, NODE_ID = the
 * instance id, so the drainer finds the node by the id the Auto Scaling group names); the
 * deployment CA from its two parameters (the key 0600 in a 0700 directory, decision 0164);
 * then doctor and the service. Any failure stops the script: the node never reports
 * ready and the Auto Scaling group replaces it after its health-check grace period.
 */
export function renderNodeUserData(raw: NodeUserDataInput): string {
  const v = checked(raw);
  return `#!/bin/bash
# Workcell agent-host node bootstrap (infra/sst/node-user-data.ts). No secrets here: the
# env file comes from the SSM parameter below, read with the instance role.
set -euo pipefail
exec >>'${NODE_BOOT_LOG}' 2>&1
region='${v.region}'
release_bucket='${v.releaseBucket}'
release_key='${v.releaseKey}'
release_sha256='${v.releaseSha256}'
file_system='${v.fileSystemId}'
env_parameter='${v.envParameterName}'
ca_cert_parameter='${v.secretsCaCertParameterName}'
ca_key_parameter='${v.secretsCaKeyParameterName}'
data_root='${NODE_DATA_ROOT}'
say() { echo "workcell-node-boot: $(date -u +%FT%TZ) $*"; }

say "Debian packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends awscli nfs-common curl ca-certificates tar gzip >/dev/null

imds() {
  local token
  token="$(curl -sf -m 5 -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 300')"
  curl -sf -m 5 -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1"
}
instance_id="$(imds instance-id)"

say "shared filesystem $file_system at $data_root"
mkdir -p "$data_root"
if ! grep -q " $data_root nfs4 " /etc/fstab; then
  echo "$file_system.efs.$region.amazonaws.com:/ $data_root nfs4 ${EFS_MOUNT_OPTIONS} 0 0" >>/etc/fstab
fi
for attempt in $(seq 1 30); do
  mountpoint -q "$data_root" && break
  mount "$data_root" && break
  say "mount attempt $attempt failed; the mount target may not resolve yet"
  sleep 10
done
mountpoint -q "$data_root" || { say "the shared filesystem did not mount"; exit 1; }

say "release s3://$release_bucket/$release_key"
work="$(mktemp -d)"
aws s3 cp --only-show-errors --region "$region" "s3://$release_bucket/$release_key" "$work/release.tar.gz"
echo "$release_sha256  $work/release.tar.gz" | sha256sum --check --strict --quiet -
mkdir -p "$work/release"
tar -xzf "$work/release.tar.gz" -C "$work/release" --no-same-owner
bash "$work/release/infra/agent-host/install.sh"

say "env file from $env_parameter"
umask 077
aws ssm get-parameter --region "$region" --name "$env_parameter" --with-decryption \\
  --query Parameter.Value --output text >/etc/workcell/agent-host.env.new
echo "NODE_ID=$instance_id" >>/etc/workcell/agent-host.env.new
chmod 0600 /etc/workcell/agent-host.env.new
mv /etc/workcell/agent-host.env.new /etc/workcell/agent-host.env

say "deployment CA from $ca_cert_parameter and $ca_key_parameter"
install -d -m 0700 "$(dirname '${NODE_SECRETS_CA_KEY}')"
aws ssm get-parameter --region "$region" --name "$ca_cert_parameter" \\
  --query Parameter.Value --output text >'${NODE_SECRETS_CA_CERT}.new'
aws ssm get-parameter --region "$region" --name "$ca_key_parameter" --with-decryption \\
  --query Parameter.Value --output text >'${NODE_SECRETS_CA_KEY}.new'
chmod 0644 '${NODE_SECRETS_CA_CERT}.new'
chmod 0600 '${NODE_SECRETS_CA_KEY}.new'
mv '${NODE_SECRETS_CA_CERT}.new' '${NODE_SECRETS_CA_CERT}'
mv '${NODE_SECRETS_CA_KEY}.new' '${NODE_SECRETS_CA_KEY}'
rm -rf "$work"

say "doctor"
/opt/workcell/.tools/bin/node /opt/workcell/infra/ops/main.ts doctor --env-file /etc/workcell/agent-host.env || say "doctor reported a FAIL (above); starting anyway, /readyz decides"
systemctl enable --now workcell-agent-host
say "done: node $instance_id"
`;
}
