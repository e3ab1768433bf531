-- Rules the data model relies on, enforced by the database itself (Prisma's schema language cannot express them).

-- The installation state is a single row.
ALTER TABLE "installation_state" ADD CONSTRAINT "installation_state_single_row" CHECK ("id" = 1);

-- Addresses are stored lower-cased, so uniqueness and lookups are case-insensitive.
ALTER TABLE "users" ADD CONSTRAINT "users_email_lower_case" CHECK ("email" = lower("email"));
ALTER TABLE "invitations" ADD CONSTRAINT "invitations_email_lower_case" CHECK ("email" = lower("email"));
ALTER TABLE "installation_admin_invitations" ADD CONSTRAINT "installation_admin_invitations_email_lower_case" CHECK ("email" = lower("email"));

-- A personal workspace has its user, a shared one has none.
ALTER TABLE "organizations" ADD CONSTRAINT "organizations_personal_user" CHECK ("is_personal" = ("personal_user_id" IS NOT NULL));

-- Exactly one owner per organization: at most one here, at least one kept by the services (ownership transfer).
CREATE UNIQUE INDEX "memberships_one_owner_per_organization" ON "memberships" ("organization_id") WHERE "role" = 'owner';

-- SMTP settings: a real port, and implicit TLS and STARTTLS are exclusive.
ALTER TABLE "email_accounts" ADD CONSTRAINT "email_accounts_port_range" CHECK ("port" BETWEEN 1 AND 65535);
ALTER TABLE "email_accounts" ADD CONSTRAINT "email_accounts_tls_modes" CHECK (NOT ("use_tls" AND "use_ssl"));

-- Counters never go negative.
ALTER TABLE "email_outbox" ADD CONSTRAINT "email_outbox_attempts_non_negative" CHECK ("attempts" >= 0);
ALTER TABLE "automation_runs" ADD CONSTRAINT "automation_runs_attempts_non_negative" CHECK ("attempts" >= 0);
