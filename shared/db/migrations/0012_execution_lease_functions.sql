-- The Execution Lease's acquire and grant as server-side functions (docs/decisions/0036):
-- one round trip per call instead of a transaction of four or five statements. Same rules
-- as before (docs/decisions/0014): arrivals ordered by `seq` under the uid's advisory
-- lock; a row counts only while its run is running under the same attempt with an
-- unexpired run lease; a row is granted when no earlier row of the uid overlaps it (keys
-- "/" + Workdir + "/": overlap = one is a prefix of the other). Each statement of a
-- VOLATILE plpgsql function takes a fresh snapshot (READ COMMITTED), so everything after
-- the lock sees what the previous holder of the lock committed.

CREATE OR REPLACE FUNCTION workcell_lock_execution_leases(p_uid text, p_lock_timeout_ms integer)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_previous text := current_setting('lock_timeout');
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  -- The same key as agent-host/runs/execution-lease/execution-leases.ts (re-entrant).
  PERFORM pg_advisory_xact_lock(hashtextextended('workcell.runs.execution-lease:' || p_uid, 0));
  PERFORM set_config('lock_timeout', v_previous, true);
END $$;
--> statement-breakpoint

-- Grants the lease when nothing earlier overlaps it. `out_root_unchanged`: no lease on an
-- overlapping root was granted since the caller's own previous one on this root
-- (`p_previous_seq`), so the after-scan that command took is still the root's state as far
-- as leased commands go. Every grant stamps its root with its seq.
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
  -- Rows of runs that are no longer live are dropped by whoever next looks.
  DELETE FROM execution_leases l
  WHERE l.uid = p_uid AND NOT EXISTS (
    SELECT 1 FROM agent_runs r
    WHERE r.run_id = l.run_id AND r.uid = l.uid AND r.attempt = l.attempt
      AND r.status = 'running' AND r.lease_expires_at > now());
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

-- A command's arrival: its row (only for a live run) and, when the root is free, its grant.
-- No row (`run_not_live`) when the run is not running under this attempt any more.
CREATE OR REPLACE FUNCTION workcell_acquire_execution_lease(
  p_lease_id uuid,
  p_uid text,
  p_root_key text,
  p_run_id uuid,
  p_attempt integer,
  p_node_id text,
  p_previous_seq bigint,
  p_lock_timeout_ms integer
)
RETURNS TABLE (out_seq bigint, out_state text, out_root_unchanged boolean)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_seq bigint;
BEGIN
  PERFORM workcell_lock_execution_leases(p_uid, p_lock_timeout_ms);
  INSERT INTO execution_leases (lease_id, uid, root_key, run_id, attempt, node_id, state)
  SELECT p_lease_id, p_uid, p_root_key, p_run_id, p_attempt, p_node_id, 'waiting'
  WHERE EXISTS (
    SELECT 1 FROM agent_runs r
    WHERE r.run_id = p_run_id AND r.uid = p_uid AND r.attempt = p_attempt
      AND r.status = 'running' AND r.lease_expires_at > now())
  RETURNING seq INTO v_seq;
  IF v_seq IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY
    SELECT v_seq, g.out_state, g.out_root_unchanged
    FROM workcell_grant_execution_lease(
      p_lease_id, p_uid, p_root_key, v_seq, p_previous_seq, p_lock_timeout_ms) g;
END $$;
