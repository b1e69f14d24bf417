CREATE TABLE "personal_access_tokens" (
	"token_id" uuid PRIMARY KEY NOT NULL,
	"uid" text NOT NULL,
	"name" text NOT NULL,
	"scopes" text[] NOT NULL,
	"secret_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "personal_access_tokens_scopes_check" CHECK ("personal_access_tokens"."scopes" <@ array['runs', 'files', 'admin']::text[] and cardinality("personal_access_tokens"."scopes") > 0)
);
--> statement-breakpoint
CREATE INDEX "personal_access_tokens_uid_idx" ON "personal_access_tokens" USING btree ("uid","created_at");