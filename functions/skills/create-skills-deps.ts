import type { S3Client } from "@aws-sdk/client-s3";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { SkillsDataPlane } from "../../shared/contracts/skills-data-plane.ts";
import type { SkillRoutesDeps } from "../routes/skills-routes.ts";
import { createS3SkillArchiveUploads } from "./skill-archive-uploads.ts";
import { createSqsSkillRefreshQueue } from "./skill-refresh-queue.ts";

export type SkillsDeps = Pick<
  SkillRoutesDeps,
  "skillsDataPlane" | "skillUploads" | "skillRefreshQueue" | "skillsLimits"
>;

/**
 * AppDeps' skills fields for an entry: archives are uploaded to the attachments bucket,
 * refresh backstops go to the run queue, and the agent-host side is `skillsDataPlane`
 * (over HTTP in the split deployment, in-process in the local Workcell).
 */
export function createSkillsDeps(o: {
  s3: S3Client;
  /** Presigns browser upload URLs when browsers reach S3 elsewhere (local proxy); default s3. */
  presignS3?: S3Client;
  /** ATTACHMENTS_BUCKET. */
  bucket: string;
  sqs: SQSClient;
  /** RUN_QUEUE_URL. */
  queueUrl: string;
  skillsDataPlane: SkillsDataPlane;
}): SkillsDeps {
  return {
    skillsDataPlane: o.skillsDataPlane,
    skillUploads: createS3SkillArchiveUploads({
      s3: o.s3,
      ...(o.presignS3 === undefined ? {} : { presignS3: o.presignS3 }),
      bucket: o.bucket,
    }),
    skillRefreshQueue: createSqsSkillRefreshQueue({ sqs: o.sqs, queueUrl: o.queueUrl }),
  };
}
