CREATE TABLE "user_secrets" (
	"uid" text NOT NULL,
	"name" text NOT NULL,
	"hosts" text[] NOT NULL,
	"header" text NOT NULL,
	"template" text NOT NULL,
	"key_id" text NOT NULL,
	"wrapped_key" text NOT NULL,
	"ciphertext" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "user_secrets_uid_name_pk" PRIMARY KEY("uid","name"),
	CONSTRAINT "user_secrets_name_check" CHECK ("user_secrets"."name" ~ '^[A-Z][A-Z0-9_]{0,63}$'),
	CONSTRAINT "user_secrets_hosts_check" CHECK (cardinality("user_secrets"."hosts") > 0)
);
