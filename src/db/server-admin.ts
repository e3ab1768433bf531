// Administrative statements on a PostgreSQL server (creating and dropping databases), used by the test tooling.
import pg from 'pg';

/** The URL of another database on the same server, with the same credentials. */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.href;
}

/** Runs one statement through the `postgres` maintenance database (the template databases refuse connections). */
export async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl(serverUrl, 'postgres') });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
