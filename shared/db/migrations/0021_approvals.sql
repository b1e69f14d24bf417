CREATE TABLE "run_approvals" (
	"approval_id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"run_id" uuid NOT NULL,
	"uid" text NOT NULL,
	"kind" text NOT NULL,
	"status" text NOT NULL,
	"tool" text,
	"tool_call_id" text,
	"arguments" jsonb,
	"arguments_hash" text,
	"host" text,
	"port" integer,
	"generation" integer,
	"resume_state" jsonb,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"decided_at" timestamp with time zone,
	"decided_by" text,
	"note" text,
	"scope" text,
	"resumed_attempt" integer,
	CONSTRAINT "run_approvals_kind_check" CHECK ("run_approvals"."kind" in ('tool', 'network')),
	CONSTRAINT "run_approvals_status_check" CHECK ("run_approvals"."status" in ('pending', 'approved', 'denied', 'expired')),
	CONSTRAINT "run_approvals_scope_check" CHECK ("run_approvals"."scope" is null or "run_approvals"."scope" in ('once', 'run')),
	CONSTRAINT "run_approvals_decided_check" CHECK (("run_approvals"."status" = 'pending') = ("run_approvals"."decided_at" is null)),
	CONSTRAINT "run_approvals_note_check" CHECK ("run_approvals"."note" is null or char_length("run_approvals"."note") <= 2000)
);
--> statement-breakpoint
CREATE TABLE "user_approval_policies" (
	"uid" text PRIMARY KEY NOT NULL,
	"all_tools" boolean DEFAULT false NOT NULL,
	"tools" text[] DEFAULT '{}'::text[] NOT NULL,
	"max_timeout_seconds" integer,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agent_runs" DROP CONSTRAINT "agent_runs_status_check";--> statement-breakpoint
ALTER TABLE "run_approvals" ADD CONSTRAINT "run_approvals_run_fk" FOREIGN KEY ("run_id","uid") REFERENCES "public"."agent_runs"("run_id","uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "run_approvals_one_pending_idx" ON "run_approvals" USING btree ("run_id") WHERE "run_approvals"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "run_approvals_run_idx" ON "run_approvals" USING btree ("run_id","requested_at");--> statement-breakpoint
CREATE INDEX "run_approvals_expiry_idx" ON "run_approvals" USING btree ("expires_at") WHERE "run_approvals"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "agent_runs_awaiting_idx" ON "agent_runs" USING btree ("thread_id") WHERE "agent_runs"."status" = 'awaiting_approval';--> statement-breakpoint
ALTER TABLE "agent_runs" ADD CONSTRAINT "agent_runs_status_check" CHECK ("agent_runs"."status" in ('pending', 'running', 'awaiting_approval', 'succeeded', 'failed', 'cancelled'));