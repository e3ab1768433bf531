// The serving role: the non-superuser, non-BYPASSRLS role workspace requests run as, so row-level security binds them.
import pg from 'pg';
import type { Queryable } from './client.js';

/** The role the service creates on a database it manages (the embedded one, the test server). */
export const SERVING_ROLE = 'crm_serving';

/** The same URL (host, database, password, pooler) signed in as the serving role. */
export function servingRoleUrl(ownerUrl: string): string {
  const url = new URL(ownerUrl);
  url.username = SERVING_ROLE;
  return url.href;
}

/**
 * Creates the serving role when missing, with the owner's password (the URL's: one secret to keep), and grants it
 * the rows (never the schema) of `ownerUrl`'s database, for tables that later migrations create too (the job
 * queue is reached through `crm_add_job` only). Idempotent: run after the migrations. The role is the server's, shared by its databases; the grants are per database.
 */
export async function ensureServingRole(ownerUrl: string): Promise<void> {
  const owner = new URL(ownerUrl);
  const password = decodeURIComponent(owner.password);
  const database = decodeURIComponent(owner.pathname.slice(1));
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const role = pg.escapeIdentifier(SERVING_ROLE);
    // Two starts at once (test files, server processes) may both find the role missing: one creates it.
    await client.query(`DO $$ BEGIN
      CREATE ROLE ${role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END $$`);
    await client.query(`ALTER ROLE ${role} NOSUPERUSER NOBYPASSRLS PASSWORD ${pg.escapeLiteral(password)}`);
    await client.query(`GRANT CONNECT, TEMPORARY ON DATABASE ${pg.escapeIdentifier(database)} TO ${role}`);
    for (const statement of [
      `GRANT USAGE ON SCHEMA public TO ${role}`,
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`,
      `GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${role}`,
      `ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${role}`,
      `ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO ${role}`,
    ]) {
      await client.query(statement);
    }
  } finally {
    await client.end();
  }
}

/** Whether the role `queryable` is signed in as escapes row-level security (a superuser, or BYPASSRLS). */
export async function bypassesRowSecurity(queryable: Queryable): Promise<boolean> {
  const { rows } = await queryable.query<{ bypasses: boolean }>(
    'SELECT rolsuper OR rolbypassrls AS bypasses FROM pg_roles WHERE rolname = current_user',
  );
  return rows[0]?.bypasses ?? false;
}
