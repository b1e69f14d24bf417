import type { ClusterDeps, Input, Output } from "./cluster-deps.ts";

export type SharedFilesystemArgs = {
  /** The nodes' subnets, one per availability zone: each gets a mount target. */
  subnetIds: Output<string[]>;
  /** How many subnets there are (the VPC's zones): known before deploy, so the graph is. */
  zoneCount: number;
  securityGroupId: Input<string>;
};

/**
 * The data root every node mounts (EFS, encrypted at rest with the account's EFS key),
 * reachable only through its mount targets, whose only security group admits NFS from
 * the nodes. Elastic throughput: a workspace burst needs no provisioned capacity.
 * sst.aws.Efs is not used: its group admits NFS from the whole VPC.
 */
export function sharedFilesystem(d: ClusterDeps, args: SharedFilesystemArgs) {
  const fileSystem = new d.aws.efs.FileSystem("SharedFs", {
    encrypted: true,
    performanceMode: "generalPurpose",
    throughputMode: "elastic",
    tags: { Name: "workcell-data-root" },
  });
  new d.aws.efs.BackupPolicy("SharedFsBackup", {
    fileSystemId: fileSystem.id,
    backupPolicy: { status: "ENABLED" },
  });
  const mountTargets = Array.from(
    { length: args.zoneCount },
    (_, i) =>
      new d.aws.efs.MountTarget(`SharedFsMount${i}`, {
        fileSystemId: fileSystem.id,
        subnetId: args.subnetIds.apply((ids) => {
          const id = ids[i];
          if (id === undefined) throw new Error(`the VPC has no private subnet ${i}`);
          return id;
        }),
        securityGroups: [args.securityGroupId],
      }),
  );
  return { fileSystem, mountTargets };
}
