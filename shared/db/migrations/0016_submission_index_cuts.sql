ALTER TABLE "requests" DROP CONSTRAINT "requests_uid_idempotency_key_key";--> statement-breakpoint
ALTER TABLE "requests" DROP CONSTRAINT "requests_thread_fk";
--> statement-breakpoint
DROP INDEX "agent_runs_pending_idx";--> statement-breakpoint
DROP INDEX "messages_run_idx";--> statement-breakpoint
ALTER TABLE "requests" ALTER COLUMN "request_hash" DROP NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "requests_uid_idempotency_key_key" ON "requests" USING btree ("uid","idempotency_key") WHERE "requests"."idempotency_key" is not null;--> statement-breakpoint
CREATE INDEX "agent_runs_pending_idx" ON "agent_runs" USING btree ("status","created_at") WHERE "agent_runs"."status" = 'pending' and "agent_runs"."parent_run_id" is null and "agent_runs"."waiting_since" is null;--> statement-breakpoint
CREATE INDEX "messages_run_idx" ON "messages" USING btree ("run_id") WHERE "messages"."run_id" is not null;--> statement-breakpoint
ALTER TABLE "requests" ADD CONSTRAINT "requests_hash_check" CHECK ("requests"."idempotency_key" is null or "requests"."request_hash" is not null);