CREATE TABLE "execution_lease_roots" (
	"uid" text NOT NULL,
	"root_key" text NOT NULL,
	"last_granted_seq" bigint NOT NULL,
	CONSTRAINT "execution_lease_roots_pkey" PRIMARY KEY("uid","root_key")
);
