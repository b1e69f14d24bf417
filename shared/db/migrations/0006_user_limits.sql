CREATE TABLE "user_limits" (
	"uid" text PRIMARY KEY NOT NULL,
	"workspace_bytes" bigint,
	"workspace_inodes" bigint,
	"max_concurrent_runs" integer,
	"requests_per_minute" integer,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
