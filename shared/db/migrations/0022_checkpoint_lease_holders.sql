ALTER TABLE "execution_leases" ALTER COLUMN "run_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "execution_leases" ALTER COLUMN "attempt" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "checkpoints" ADD COLUMN "store_id" uuid;--> statement-breakpoint
ALTER TABLE "execution_leases" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "checkpoints_store_idx" ON "checkpoints" USING btree ("store_id");--> statement-breakpoint
ALTER TABLE "execution_leases" ADD CONSTRAINT "execution_leases_holder_check" CHECK (("execution_leases"."run_id" is null) = ("execution_leases"."attempt" is null) and ("execution_leases"."run_id" is null) = ("execution_leases"."expires_at" is not null));--> statement-breakpoint

-- Rows that no longer count: a run row whose run is not running under its attempt with an
-- unexpired run lease, a holder row past its expires_at. Called under the uid's lock.
CREATE OR REPLACE FUNCTION workcell_drop_dead_execution_leases(p_uid text)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  DELETE FROM execution_leases l
  WHERE l.uid = p_uid AND CASE
    WHEN l.run_id IS NULL THEN l.expires_at <= now()
    ELSE NOT EXISTS (
      SELECT 1 FROM agent_runs r
      WHERE r.run_id = l.run_id AND r.uid = l.uid AND r.attempt = l.attempt
        AND r.status = 'running' AND r.lease_expires_at > now())
  END;
END $$;
--> statement-breakpoint

-- A holder that is not a run (docs/decisions/0170): a row with no run_id counts while its
-- expires_at is in the future. The grant's clean-up below drops such a row once expired,
-- exactly as it drops a row whose run is no longer live; everything else is unchanged
-- from migration 0012.
CREATE OR REPLACE FUNCTION workcell_grant_execution_lease(
  p_lease_id uuid,
  p_uid text,
  p_root_key text,
  p_seq bigint,
  p_previous_seq bigint,
  p_lock_timeout_ms integer
)
RETURNS TABLE (out_state text, out_root_unchanged boolean)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_unchanged boolean;
BEGIN
  PERFORM workcell_lock_execution_leases(p_uid, p_lock_timeout_ms);
  PERFORM workcell_drop_dead_execution_leases(p_uid);
  IF NOT EXISTS (SELECT 1 FROM execution_leases l WHERE l.lease_id = p_lease_id) THEN
    RETURN QUERY SELECT 'gone'::text, false;
    RETURN;
  END IF;
  IF EXISTS (
    SELECT 1 FROM execution_leases o
    WHERE o.uid = p_uid AND o.seq < p_seq
      AND (left(o.root_key, char_length(p_root_key)) = p_root_key
           OR left(p_root_key, char_length(o.root_key)) = o.root_key)
  ) THEN
    RETURN QUERY SELECT 'waiting'::text, false;
    RETURN;
  END IF;
  UPDATE execution_leases l SET state = 'held', acquired_at = now()
  WHERE l.lease_id = p_lease_id AND l.state = 'waiting';
  v_unchanged := p_previous_seq IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM execution_lease_roots x
    WHERE x.uid = p_uid AND x.last_granted_seq > p_previous_seq
      AND (left(x.root_key, char_length(p_root_key)) = p_root_key
           OR left(p_root_key, char_length(x.root_key)) = x.root_key));
  INSERT INTO execution_lease_roots AS x (uid, root_key, last_granted_seq)
  VALUES (p_uid, p_root_key, p_seq)
  ON CONFLICT (uid, root_key)
  DO UPDATE SET last_granted_seq = greatest(x.last_granted_seq, excluded.last_granted_seq);
  RETURN QUERY SELECT 'granted'::text, v_unchanged;
END $$;
--> statement-breakpoint

-- A holder that is not a run: arrives (p_arrive: a new row, waiting, alive for p_ttl_ms),
-- or renews its row and asks again. 'granted' when no earlier row of the uid overlaps (the
-- row is then held; a held row stays granted, since every later arrival waits for it),
-- 'waiting' otherwise, 'gone' when the row has lapsed meanwhile (it expired, so something
-- else may have been granted: the holder must not rely on anything it did under it). A
-- holder only reads the root, so a grant does not stamp execution_lease_roots: the
-- commands' after-scans stay current (docs/decisions/0036).
CREATE OR REPLACE FUNCTION workcell_hold_execution_lease(
  p_lease_id uuid,
  p_uid text,
  p_root_key text,
  p_node_id text,
  p_arrive boolean,
  p_ttl_ms integer,
  p_lock_timeout_ms integer
)
RETURNS TABLE (out_seq bigint, out_state text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_seq bigint;
BEGIN
  PERFORM workcell_lock_execution_leases(p_uid, p_lock_timeout_ms);
  PERFORM workcell_drop_dead_execution_leases(p_uid);
  IF p_arrive THEN
    INSERT INTO execution_leases (lease_id, uid, root_key, node_id, state, expires_at)
    VALUES (p_lease_id, p_uid, p_root_key, p_node_id, 'waiting',
            now() + p_ttl_ms * interval '1 millisecond')
    RETURNING seq INTO v_seq;
  ELSE
    UPDATE execution_leases l SET expires_at = now() + p_ttl_ms * interval '1 millisecond'
    WHERE l.lease_id = p_lease_id AND l.uid = p_uid AND l.run_id IS NULL
    RETURNING seq INTO v_seq;
  END IF;
  IF v_seq IS NULL THEN
    RETURN QUERY SELECT NULL::bigint, 'gone'::text;
    RETURN;
  END IF;
  IF EXISTS (
    SELECT 1 FROM execution_leases o
    WHERE o.uid = p_uid AND o.seq < v_seq
      AND (left(o.root_key, char_length(p_root_key)) = p_root_key
           OR left(p_root_key, char_length(o.root_key)) = o.root_key)
  ) THEN
    RETURN QUERY SELECT v_seq, 'waiting'::text;
    RETURN;
  END IF;
  UPDATE execution_leases l SET state = 'held', acquired_at = now()
  WHERE l.lease_id = p_lease_id AND l.state = 'waiting';
  RETURN QUERY SELECT v_seq, 'granted'::text;
END $$;
