CREATE SEQUENCE "public"."sandbox_generation_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "agent_runs" (
	"run_id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"uid" text NOT NULL,
	"thread_id" uuid NOT NULL,
	"parent_run_id" uuid,
	"request_id" uuid,
	"runtime_scope_id" uuid NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"cancel_requested" boolean DEFAULT false NOT NULL,
	"attempt" integer DEFAULT 0 NOT NULL,
	"owner_node" text,
	"lease_expires_at" timestamp with time zone,
	"error" jsonb,
	"input" text NOT NULL,
	"agent" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"dispatched_at" timestamp with time zone,
	CONSTRAINT "agent_runs_run_id_uid_key" UNIQUE("run_id","uid"),
	CONSTRAINT "agent_runs_run_scope_key" UNIQUE("run_id","uid","runtime_scope_id"),
	CONSTRAINT "agent_runs_status_check" CHECK ("agent_runs"."status" in ('pending', 'running', 'succeeded', 'failed', 'cancelled')),
	CONSTRAINT "agent_runs_attempt_check" CHECK ("agent_runs"."attempt" >= 0),
	CONSTRAINT "agent_runs_request_check" CHECK ("agent_runs"."parent_run_id" is not null or "agent_runs"."request_id" is not null),
	CONSTRAINT "agent_runs_error_check" CHECK ("agent_runs"."error" is null or (jsonb_typeof("agent_runs"."error") = 'object' and jsonb_typeof("agent_runs"."error" -> 'code') = 'string' and jsonb_typeof("agent_runs"."error" -> 'message') = 'string')),
	CONSTRAINT "agent_runs_failed_error_check" CHECK ("agent_runs"."status" <> 'failed' or "agent_runs"."error" is not null),
	CONSTRAINT "agent_runs_finished_check" CHECK (("agent_runs"."status" in ('succeeded', 'failed', 'cancelled')) = ("agent_runs"."finished_at" is not null)),
	CONSTRAINT "agent_runs_running_check" CHECK ("agent_runs"."status" <> 'running' or ("agent_runs"."owner_node" is not null and "agent_runs"."lease_expires_at" is not null and "agent_runs"."started_at" is not null))
);
--> statement-breakpoint
CREATE TABLE "attachments" (
	"file_id" uuid PRIMARY KEY NOT NULL,
	"uid" text NOT NULL,
	"thread_id" uuid NOT NULL,
	"file_name" text NOT NULL,
	"content_type" text NOT NULL,
	"size" bigint NOT NULL,
	"status" text DEFAULT 'uploaded' NOT NULL,
	"path" text NOT NULL,
	"original_path" text NOT NULL,
	"uploaded_at" timestamp with time zone DEFAULT now() NOT NULL,
	"request_id" uuid,
	CONSTRAINT "attachments_status_check" CHECK ("attachments"."status" in ('uploaded', 'parsed')),
	CONSTRAINT "attachments_size_check" CHECK ("attachments"."size" >= 0)
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"thread_id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"uid" text NOT NULL,
	"project_id" uuid NOT NULL,
	"parent_thread_id" uuid,
	"root_thread_id" uuid NOT NULL,
	"title" text,
	"status" text DEFAULT 'active' NOT NULL,
	"deleted_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "conversations_thread_id_uid_key" UNIQUE("thread_id","uid"),
	CONSTRAINT "conversations_thread_scope_key" UNIQUE("thread_id","uid","root_thread_id"),
	CONSTRAINT "conversations_thread_tree_key" UNIQUE("thread_id","uid","root_thread_id","project_id"),
	CONSTRAINT "conversations_root_check" CHECK (("conversations"."parent_thread_id" is null) = ("conversations"."root_thread_id" = "conversations"."thread_id")),
	CONSTRAINT "conversations_status_check" CHECK ("conversations"."status" in ('active', 'deleted')),
	CONSTRAINT "conversations_deleted_check" CHECK (("conversations"."status" = 'deleted') = ("conversations"."deleted_at" is not null))
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"uid" text NOT NULL,
	"key" text NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"request_hash" text NOT NULL,
	"response_status" integer,
	"response_body" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY("uid","key"),
	CONSTRAINT "idempotency_keys_response_check" CHECK (("idempotency_keys"."response_status" is null) = ("idempotency_keys"."completed_at" is null) and ("idempotency_keys"."response_status" is null or "idempotency_keys"."response_status" between 100 and 599))
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"uid" text NOT NULL,
	"thread_id" uuid NOT NULL,
	"run_id" uuid,
	"role" text NOT NULL,
	"content" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "messages_id_thread_uid_key" UNIQUE("id","thread_id","uid"),
	CONSTRAINT "messages_role_check" CHECK ("messages"."role" in ('user', 'assistant', 'system', 'tool'))
);
--> statement-breakpoint
CREATE TABLE "nodes" (
	"node_id" text PRIMARY KEY NOT NULL,
	"state" text DEFAULT 'active' NOT NULL,
	"data_plane_url" text NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "nodes_state_check" CHECK ("nodes"."state" in ('active', 'quiesced'))
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"uid" text NOT NULL,
	"name" text NOT NULL,
	"workdir_path" text NOT NULL,
	"directory_mode" text NOT NULL,
	"implicit" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "projects_id_uid_key" UNIQUE("id","uid"),
	CONSTRAINT "projects_directory_mode_check" CHECK ("projects"."directory_mode" in ('managed', 'linked')),
	CONSTRAINT "projects_workdir_path_check" CHECK ("projects"."workdir_path" ~ '^[^/\\]+(/[^/\\]+)*$' and "projects"."workdir_path" !~ '(^|/)\.\.?(/|$)'),
	CONSTRAINT "projects_managed_path_check" CHECK ("projects"."directory_mode" <> 'managed' or "projects"."workdir_path" ~ '^projects/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')
);
--> statement-breakpoint
CREATE TABLE "requests" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"uid" text NOT NULL,
	"thread_id" uuid NOT NULL,
	"message_id" uuid NOT NULL,
	"idempotency_key" text,
	"request_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "requests_uid_idempotency_key_key" UNIQUE("uid","idempotency_key"),
	CONSTRAINT "requests_id_thread_uid_key" UNIQUE("id","thread_id","uid")
);
--> statement-breakpoint
CREATE TABLE "run_events" (
	"run_id" uuid NOT NULL,
	"uid" text NOT NULL,
	"seq" integer NOT NULL,
	"prev_seq" integer GENERATED ALWAYS AS (nullif(seq - 1, 0)) STORED,
	"type" text NOT NULL,
	"data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_events_pkey" PRIMARY KEY("run_id","seq"),
	CONSTRAINT "run_events_seq_check" CHECK ("run_events"."seq" >= 1)
);
--> statement-breakpoint
CREATE TABLE "sandboxes" (
	"sandbox_id" text PRIMARY KEY NOT NULL,
	"uid" text NOT NULL,
	"runtime_scope_id" uuid NOT NULL,
	"workdir_path" text NOT NULL,
	"generation" bigint DEFAULT nextval('sandbox_generation_seq') NOT NULL,
	"node_id" text NOT NULL,
	"state" text DEFAULT 'creating' NOT NULL,
	"container_id" text,
	"last_used_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sandboxes_uid_scope_key" UNIQUE("uid","runtime_scope_id"),
	CONSTRAINT "sandboxes_id_check" CHECK ("sandboxes"."sandbox_id" ~ '^[0-9a-f]{12}$'),
	CONSTRAINT "sandboxes_generation_check" CHECK ("sandboxes"."generation" >= 1),
	CONSTRAINT "sandboxes_state_check" CHECK ("sandboxes"."state" in ('creating', 'running', 'destroying', 'destroyed', 'failed')),
	CONSTRAINT "sandboxes_workdir_path_check" CHECK ("sandboxes"."workdir_path" ~ '^[^/\\]+(/[^/\\]+)*$' and "sandboxes"."workdir_path" !~ '(^|/)\.\.?(/|$)')
);
--> statement-breakpoint
CREATE TABLE "skill_grants" (
	"uid" text NOT NULL,
	"slug" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "skill_grants_pkey" PRIMARY KEY("uid","slug")
);
--> statement-breakpoint
CREATE TABLE "skills" (
	"slug" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"content_hash" text NOT NULL,
	"source_version" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "skills_kind_check" CHECK ("skills"."kind" in ('builtin', 'shared')),
	CONSTRAINT "skills_slug_check" CHECK ("skills"."slug" ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$')
);
--> statement-breakpoint
CREATE TABLE "tmp_uploads" (
	"file_id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"uid" text NOT NULL,
	"group_id" uuid NOT NULL,
	"name" text NOT NULL,
	"size" bigint NOT NULL,
	"content_type" text NOT NULL,
	"object_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tmp_uploads_object_key_key" UNIQUE("object_key"),
	CONSTRAINT "tmp_uploads_size_check" CHECK ("tmp_uploads"."size" >= 0)
);
--> statement-breakpoint
ALTER TABLE "agent_runs" ADD CONSTRAINT "agent_runs_thread_fk" FOREIGN KEY ("thread_id","uid","runtime_scope_id") REFERENCES "public"."conversations"("thread_id","uid","root_thread_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_runs" ADD CONSTRAINT "agent_runs_parent_fk" FOREIGN KEY ("parent_run_id","uid","runtime_scope_id") REFERENCES "public"."agent_runs"("run_id","uid","runtime_scope_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_runs" ADD CONSTRAINT "agent_runs_request_fk" FOREIGN KEY ("request_id","thread_id","uid") REFERENCES "public"."requests"("id","thread_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "attachments" ADD CONSTRAINT "attachments_thread_fk" FOREIGN KEY ("thread_id","uid") REFERENCES "public"."conversations"("thread_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "attachments" ADD CONSTRAINT "attachments_request_fk" FOREIGN KEY ("request_id","thread_id","uid") REFERENCES "public"."requests"("id","thread_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_project_fk" FOREIGN KEY ("project_id","uid") REFERENCES "public"."projects"("id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_parent_fk" FOREIGN KEY ("parent_thread_id","uid","root_thread_id","project_id") REFERENCES "public"."conversations"("thread_id","uid","root_thread_id","project_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_thread_fk" FOREIGN KEY ("thread_id","uid") REFERENCES "public"."conversations"("thread_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_run_fk" FOREIGN KEY ("run_id","uid") REFERENCES "public"."agent_runs"("run_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "requests" ADD CONSTRAINT "requests_thread_fk" FOREIGN KEY ("thread_id","uid") REFERENCES "public"."conversations"("thread_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "requests" ADD CONSTRAINT "requests_message_fk" FOREIGN KEY ("message_id","thread_id","uid") REFERENCES "public"."messages"("id","thread_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_events" ADD CONSTRAINT "run_events_run_fk" FOREIGN KEY ("run_id","uid") REFERENCES "public"."agent_runs"("run_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_events" ADD CONSTRAINT "run_events_prev_fk" FOREIGN KEY ("run_id","prev_seq") REFERENCES "public"."run_events"("run_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sandboxes" ADD CONSTRAINT "sandboxes_node_fk" FOREIGN KEY ("node_id") REFERENCES "public"."nodes"("node_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "skill_grants" ADD CONSTRAINT "skill_grants_skill_fk" FOREIGN KEY ("slug") REFERENCES "public"."skills"("slug") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_runs_pending_idx" ON "agent_runs" USING btree ("status","created_at") WHERE "agent_runs"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "agent_runs_lease_idx" ON "agent_runs" USING btree ("status","lease_expires_at") WHERE "agent_runs"."status" = 'running';--> statement-breakpoint
CREATE INDEX "agent_runs_scope_idx" ON "agent_runs" USING btree ("uid","runtime_scope_id","status");--> statement-breakpoint
CREATE INDEX "agent_runs_thread_idx" ON "agent_runs" USING btree ("thread_id","created_at");--> statement-breakpoint
CREATE INDEX "attachments_thread_idx" ON "attachments" USING btree ("thread_id","uploaded_at");--> statement-breakpoint
CREATE INDEX "conversations_uid_created_idx" ON "conversations" USING btree ("uid","created_at","thread_id");--> statement-breakpoint
CREATE INDEX "conversations_project_idx" ON "conversations" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "messages_thread_created_idx" ON "messages" USING btree ("thread_id","created_at","id");--> statement-breakpoint
CREATE INDEX "messages_run_idx" ON "messages" USING btree ("run_id");--> statement-breakpoint
CREATE UNIQUE INDEX "projects_managed_workdir_key" ON "projects" USING btree ("uid","workdir_path") WHERE "projects"."directory_mode" = 'managed';--> statement-breakpoint
CREATE INDEX "projects_uid_created_idx" ON "projects" USING btree ("uid","created_at","id");--> statement-breakpoint
CREATE INDEX "sandboxes_node_state_idx" ON "sandboxes" USING btree ("node_id","state","last_used_at");--> statement-breakpoint
CREATE INDEX "skill_grants_slug_idx" ON "skill_grants" USING btree ("slug");--> statement-breakpoint
CREATE INDEX "tmp_uploads_uid_created_idx" ON "tmp_uploads" USING btree ("uid","created_at");--> statement-breakpoint
CREATE INDEX "tmp_uploads_uid_group_idx" ON "tmp_uploads" USING btree ("uid","group_id");