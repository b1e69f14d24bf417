import type * as Aws from "@pulumi/aws";
import type * as Pulumi from "@pulumi/pulumi";

// The node group's pieces are plain Pulumi AWS resources built from what they are handed:
// sst.config.ts passes SST's globals (`aws`, `$util`), the offline graph test
// (tests/unit/infra/sst-graph/) passes the same packages running under Pulumi's mocks.
// Only types are imported here, so nothing in this folder loads a provider by itself.

export type ClusterDeps = {
  aws: typeof Aws;
  pulumi: typeof Pulumi;
};

export type Input<T> = Pulumi.Input<T>;
export type Output<T> = Pulumi.Output<T>;
export type Resource = Pulumi.Resource;

/** The agent-host data plane's port on the nodes (DATA_PLANE_PORT). */
export const DATA_PLANE_PORT = 8081;
/** NFS, the only port of the shared filesystem. */
export const NFS_PORT = 2049;
