CREATE TABLE "run_change_sets" (
	"run_id" uuid PRIMARY KEY NOT NULL,
	"uid" text NOT NULL,
	"truncated" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "run_changes" (
	"run_id" uuid NOT NULL,
	"uid" text NOT NULL,
	"path" text NOT NULL,
	"change" text NOT NULL,
	"size" bigint,
	CONSTRAINT "run_changes_pkey" PRIMARY KEY("run_id","path"),
	CONSTRAINT "run_changes_change_check" CHECK ("run_changes"."change" in ('added', 'modified', 'deleted')),
	CONSTRAINT "run_changes_size_check" CHECK (("run_changes"."change" = 'deleted') = ("run_changes"."size" is null) and ("run_changes"."size" is null or "run_changes"."size" >= 0)),
	CONSTRAINT "run_changes_path_check" CHECK (char_length("run_changes"."path") between 1 and 4096 and "run_changes"."path" !~ '^/')
);
--> statement-breakpoint
ALTER TABLE "run_change_sets" ADD CONSTRAINT "run_change_sets_run_fk" FOREIGN KEY ("run_id","uid") REFERENCES "public"."agent_runs"("run_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_changes" ADD CONSTRAINT "run_changes_run_fk" FOREIGN KEY ("run_id","uid") REFERENCES "public"."agent_runs"("run_id","uid") ON DELETE no action ON UPDATE no action;