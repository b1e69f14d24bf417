CREATE TABLE "api_rate_buckets" (
	"uid" text PRIMARY KEY NOT NULL,
	"tokens" double precision NOT NULL,
	"refilled_at" timestamp with time zone NOT NULL,
	"last_granted" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "event_stream_slots" (
	"stream_id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"uid" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "event_stream_slots_uid_idx" ON "event_stream_slots" USING btree ("uid","expires_at");