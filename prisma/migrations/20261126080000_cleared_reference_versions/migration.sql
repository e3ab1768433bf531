-- Written by hand (Prisma does not model triggers).
-- A reference cleared by a foreign key's ON DELETE SET NULL (a user deleted under a company's or contact's assignee, a
-- contact under a deal or task, a deal under a task) changes the record as any write does, so its version moves
-- forward too: `updated_at` is the record's ETag (a cached copy or an If-Match of the old version must not match) and
-- the incremental sync's `updated_since` bound (a client that synced before must receive the change). The service's
-- own writes set `updated_at` themselves (strictly later, lib/etag.ts nextVersion); the trigger fires only when an
-- update left it as it was, which among these columns only the foreign keys' actions do.
CREATE FUNCTION crm_version_on_cleared_reference() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.updated_at := greatest(clock_timestamp(), OLD.updated_at + interval '1 millisecond');
  RETURN NEW;
END $$;

CREATE TRIGGER companies_cleared_reference BEFORE UPDATE OF assigned_to ON "companies" FOR EACH ROW
  WHEN (NEW.updated_at = OLD.updated_at AND NEW.assigned_to IS DISTINCT FROM OLD.assigned_to)
  EXECUTE FUNCTION crm_version_on_cleared_reference();
CREATE TRIGGER contacts_cleared_reference BEFORE UPDATE OF assigned_to ON "contacts" FOR EACH ROW
  WHEN (NEW.updated_at = OLD.updated_at AND NEW.assigned_to IS DISTINCT FROM OLD.assigned_to)
  EXECUTE FUNCTION crm_version_on_cleared_reference();
CREATE TRIGGER deals_cleared_reference BEFORE UPDATE OF contact_id ON "deals" FOR EACH ROW
  WHEN (NEW.updated_at = OLD.updated_at AND NEW.contact_id IS DISTINCT FROM OLD.contact_id)
  EXECUTE FUNCTION crm_version_on_cleared_reference();
CREATE TRIGGER tasks_cleared_reference BEFORE UPDATE OF contact_id, deal_id ON "tasks" FOR EACH ROW
  WHEN (NEW.updated_at = OLD.updated_at AND (NEW.contact_id IS DISTINCT FROM OLD.contact_id OR NEW.deal_id IS DISTINCT FROM OLD.deal_id))
  EXECUTE FUNCTION crm_version_on_cleared_reference();
