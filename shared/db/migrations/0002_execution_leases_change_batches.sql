CREATE TABLE "change_batch_items" (
	"batch_id" uuid NOT NULL,
	"path" text NOT NULL,
	"change" text NOT NULL,
	"size" bigint,
	CONSTRAINT "change_batch_items_pkey" PRIMARY KEY("batch_id","path"),
	CONSTRAINT "change_batch_items_change_check" CHECK ("change_batch_items"."change" in ('added', 'modified', 'deleted')),
	CONSTRAINT "change_batch_items_size_check" CHECK (("change_batch_items"."change" = 'deleted') = ("change_batch_items"."size" is null) and ("change_batch_items"."size" is null or "change_batch_items"."size" >= 0)),
	CONSTRAINT "change_batch_items_path_check" CHECK (char_length("change_batch_items"."path") between 1 and 4096 and "change_batch_items"."path" !~ '^/')
);
--> statement-breakpoint
CREATE TABLE "change_batches" (
	"batch_id" uuid PRIMARY KEY NOT NULL,
	"run_id" uuid NOT NULL,
	"root_run_id" uuid NOT NULL,
	"uid" text NOT NULL,
	"seq" integer NOT NULL,
	"workdir_path" text NOT NULL,
	"tool" text NOT NULL,
	"command" text NOT NULL,
	"truncated" boolean NOT NULL,
	"item_count" integer NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone NOT NULL,
	"repaired" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "change_batches_tool_check" CHECK ("change_batches"."tool" in ('bash', 'shell', 'write_file')),
	CONSTRAINT "change_batches_command_check" CHECK (char_length("change_batches"."command") <= 2000),
	CONSTRAINT "change_batches_counts_check" CHECK ("change_batches"."item_count" >= 0 and "change_batches"."seq" >= 0)
);
--> statement-breakpoint
CREATE TABLE "execution_leases" (
	"lease_id" uuid PRIMARY KEY NOT NULL,
	"uid" text NOT NULL,
	"root_key" text NOT NULL,
	"run_id" uuid NOT NULL,
	"attempt" integer NOT NULL,
	"node_id" text NOT NULL,
	"state" text NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "execution_leases_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"acquired_at" timestamp with time zone,
	CONSTRAINT "execution_leases_state_check" CHECK ("execution_leases"."state" in ('waiting', 'held')),
	CONSTRAINT "execution_leases_root_key_check" CHECK ("execution_leases"."root_key" ~ '^/(.*/)?$' and char_length("execution_leases"."root_key") <= 4200),
	CONSTRAINT "execution_leases_held_check" CHECK (("execution_leases"."state" = 'held') = ("execution_leases"."acquired_at" is not null))
);
--> statement-breakpoint
ALTER TABLE "change_batch_items" ADD CONSTRAINT "change_batch_items_batch_id_change_batches_batch_id_fk" FOREIGN KEY ("batch_id") REFERENCES "public"."change_batches"("batch_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "change_batches" ADD CONSTRAINT "change_batches_run_fk" FOREIGN KEY ("run_id","uid") REFERENCES "public"."agent_runs"("run_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "change_batches" ADD CONSTRAINT "change_batches_root_run_fk" FOREIGN KEY ("root_run_id","uid") REFERENCES "public"."agent_runs"("run_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "execution_leases" ADD CONSTRAINT "execution_leases_run_fk" FOREIGN KEY ("run_id","uid") REFERENCES "public"."agent_runs"("run_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "change_batches_root_idx" ON "change_batches" USING btree ("root_run_id","seq");--> statement-breakpoint
CREATE INDEX "change_batches_run_idx" ON "change_batches" USING btree ("run_id","seq");--> statement-breakpoint
CREATE INDEX "execution_leases_uid_idx" ON "execution_leases" USING btree ("uid","seq");