CREATE TABLE "network_requests" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "network_requests_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"run_id" uuid NOT NULL,
	"uid" text NOT NULL,
	"host" text NOT NULL,
	"port" integer NOT NULL,
	"address" text,
	"protocol" text NOT NULL,
	"decision" text NOT NULL,
	"reason" text,
	"bytes_up" bigint DEFAULT 0 NOT NULL,
	"bytes_down" bigint DEFAULT 0 NOT NULL,
	"duration_ms" integer DEFAULT 0 NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "network_requests_decision_check" CHECK ("network_requests"."decision" in ('allowed', 'denied')),
	CONSTRAINT "network_requests_port_check" CHECK ("network_requests"."port" between 0 and 65535)
);
--> statement-breakpoint
CREATE TABLE "user_network_policies" (
	"uid" text PRIMARY KEY NOT NULL,
	"mode" text NOT NULL,
	"allow" text[] DEFAULT '{}'::text[] NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "user_network_policies_mode_check" CHECK ("user_network_policies"."mode" in ('none', 'allowlist'))
);
--> statement-breakpoint
ALTER TABLE "user_limits" ADD COLUMN "egress_bytes_per_run" bigint;--> statement-breakpoint
ALTER TABLE "network_requests" ADD CONSTRAINT "network_requests_run_fk" FOREIGN KEY ("run_id","uid") REFERENCES "public"."agent_runs"("run_id","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "network_requests_run_idx" ON "network_requests" USING btree ("run_id","id");