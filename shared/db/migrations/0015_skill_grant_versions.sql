CREATE SEQUENCE "public"."skill_grant_version_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "skill_grant_versions" (
	"uid" text PRIMARY KEY NOT NULL,
	"version" bigint NOT NULL
);
--> statement-breakpoint

-- Skill grant versions (docs/decisions/0075): bumped by triggers in the transaction that
-- changes what a uid's projection must hold, so no write path can forget it. Each bump
-- takes a new sequence value, so a reader that sees the same value twice knows no change
-- committed in between. Uids are bumped in sorted order (rows locked in one order).
CREATE OR REPLACE FUNCTION workcell_bump_skill_grant_versions(p_uids text[])
RETURNS void LANGUAGE sql VOLATILE AS $$
  INSERT INTO skill_grant_versions (uid, version)
  SELECT u, nextval('skill_grant_version_seq')
  FROM (SELECT DISTINCT unnest(p_uids) AS u) AS uids
  WHERE u IS NOT NULL
  ORDER BY u
  ON CONFLICT (uid) DO UPDATE SET version = excluded.version;
$$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION workcell_skill_grants_changed()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    -- No uid is named: the row '' is part of every uid's version.
    PERFORM workcell_bump_skill_grant_versions(ARRAY['']);
  ELSIF TG_OP = 'INSERT' THEN
    PERFORM workcell_bump_skill_grant_versions(ARRAY[NEW.uid]);
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM workcell_bump_skill_grant_versions(ARRAY[OLD.uid]);
  ELSE
    PERFORM workcell_bump_skill_grant_versions(ARRAY[OLD.uid, NEW.uid]);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint

-- A skill deleted deletes its grants by the foreign key's cascade, which fires this too.
CREATE TRIGGER skill_grants_bump_version
AFTER INSERT OR UPDATE OR DELETE ON skill_grants
FOR EACH ROW EXECUTE FUNCTION workcell_skill_grants_changed();
--> statement-breakpoint

CREATE TRIGGER skill_grants_truncate_bump_version
AFTER TRUNCATE ON skill_grants
FOR EACH STATEMENT EXECUTE FUNCTION workcell_skill_grants_changed();
--> statement-breakpoint

-- What a projection copies is the skill's source, checked against its content hash: a
-- change of either (or of the slug, its directory name) bumps every grantee.
CREATE OR REPLACE FUNCTION workcell_skill_source_changed()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM workcell_bump_skill_grant_versions(
    ARRAY(SELECT uid FROM skill_grants WHERE slug IN (OLD.slug, NEW.slug))
  );
  RETURN NULL;
END $$;
--> statement-breakpoint

CREATE TRIGGER skills_bump_grant_versions
AFTER UPDATE ON skills
FOR EACH ROW
WHEN (
  OLD.content_hash IS DISTINCT FROM NEW.content_hash
  OR OLD.source_version IS DISTINCT FROM NEW.source_version
  OR OLD.slug IS DISTINCT FROM NEW.slug
)
EXECUTE FUNCTION workcell_skill_source_changed();
