CREATE TABLE "checkpoints" (
	"checkpoint_id" uuid PRIMARY KEY NOT NULL,
	"uid" text NOT NULL,
	"thread_id" uuid NOT NULL,
	"run_id" uuid,
	"label" text,
	"source" text NOT NULL,
	"workdir_path" text NOT NULL,
	"node_id" text NOT NULL,
	"mode" text NOT NULL,
	"files" integer NOT NULL,
	"dirs" integer NOT NULL,
	"bytes" bigint NOT NULL,
	"skipped" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "checkpoints_source_check" CHECK ("checkpoints"."source" in ('manual', 'run', 'restore')),
	CONSTRAINT "checkpoints_mode_check" CHECK ("checkpoints"."mode" in ('reflink', 'copy')),
	CONSTRAINT "checkpoints_workdir_path_check" CHECK ("checkpoints"."workdir_path" ~ '^[^/\\]+(/[^/\\]+)*$' and "checkpoints"."workdir_path" !~ '(^|/)\.\.?(/|$)')
);
--> statement-breakpoint
ALTER TABLE "user_limits" ADD COLUMN "max_checkpoints_per_thread" integer;--> statement-breakpoint
ALTER TABLE "checkpoints" ADD CONSTRAINT "checkpoints_thread_fk" FOREIGN KEY ("thread_id","uid") REFERENCES "public"."conversations"("thread_id","uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "checkpoints_thread_created_idx" ON "checkpoints" USING btree ("thread_id","created_at");--> statement-breakpoint
CREATE INDEX "checkpoints_uid_idx" ON "checkpoints" USING btree ("uid");