/** Why an archive was refused; stable snake_case, sent to the admin in `details.problem`. */
export const ARCHIVE_PROBLEMS = [
  "unsupported_format",
  "malformed",
  "unsafe_name",
  "link_entry",
  "special_entry",
  "duplicate_entry",
  "too_many_entries",
  "too_large",
  "compression_ratio",
  "encrypted",
  "missing_skill_md",
] as const;

export type ArchiveProblem = (typeof ARCHIVE_PROBLEMS)[number];

/**
 * An archive the importer refuses. It is thrown inside the extractor (deep in a stream) and
 * turned into an ImportOutcome value at the importer's boundary; nothing of the archive is
 * kept when it is thrown.
 */
export class ArchiveRejection extends Error {
  override readonly name = "ArchiveRejection";
  readonly problem: ArchiveProblem;
  /** The entry name as the archive spelled it, when one entry is to blame. */
  readonly entry: string | undefined;

  constructor(problem: ArchiveProblem, message: string, entry?: string) {
    super(message);
    this.problem = problem;
    this.entry = entry;
  }
}
