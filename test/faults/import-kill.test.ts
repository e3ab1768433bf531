// An import whose server process is SIGKILLed mid-file resumes in a new process after the last committed batch: every
// row once, none twice. The kill is forced between batches: a second connection holds the import's row lock, so the
// job waits at the start of its next batch, with one or more batches committed, when the process dies.
import t from 'tap';
import pg from 'pg';
import { createTestDatabase } from '../helpers/database.js';
import { TEST_EMAIL_KEY, TEST_SETUP_TOKEN } from '../helpers/app.js';
import { ADMIN } from '../helpers/fixtures.js';
import { apiClient, killGroup, startServer, until as untilEvery, type Started } from '../helpers/server.js';

const ROWS = 10_000;
const database = await createTestDatabase();
t.teardown(() => database.drop());
const sql = new pg.Client({ connectionString: database.url });
await sql.connect();
t.teardown(() => sql.end());
const env = {
  DATABASE_URL: database.url,
  JWT_SECRET: 'import-kill-jwt-secret-0123456789-abcdef',
  SERVICE_SETUP_TOKEN: TEST_SETUP_TOKEN,
  EMAIL_ENCRYPTION_KEY: TEST_EMAIL_KEY,
  // The jobs of a worker whose process died are released this long after they were locked (default 60).
  JOB_RECOVERY_SECONDS: '3',
};

/** Polls every 10 ms: the first committed batch is caught before the next commits. */
const until = <T>(what: string, probe: () => Promise<T | undefined | false>) => untilEvery(what, probe, 60_000, 10);

let server: Started = await startServer(env);
t.teardown(() => killGroup(server));
const call = (method: string, path: string, body?: unknown, access?: string) => apiClient(server)(method, path, body, access);
const setup = await call('POST', '/setup/', {
  setup_token: TEST_SETUP_TOKEN,
  ...ADMIN,
  organization_name: 'Acme',
  organization_slug: 'acme',
});
if (setup.status !== 201) throw new Error(`setup: ${setup.status} ${JSON.stringify(setup.body)}`);
const access = (await call('POST', '/auth/token/', { username: ADMIN.username, password: ADMIN.password })).body.access as string;
const organizationId = (await call('GET', '/auth/me/', undefined, access)).body.organizations[0].id as string;

t.test('SIGKILL between batches: a new process resumes the import after the committed batches, each row once', async (t) => {
  const lines = ['name,website', ...Array.from({ length: ROWS }, (_, i) => `Killed Import ${i + 1},https://killed${i + 1}.example`)];
  const form = new FormData();
  form.set('kind', 'companies');
  form.set('file', new Blob([`${lines.join('\n')}\n`], { type: 'text/csv' }), 'companies.csv');
  const res = await fetch(`${server.origin}/api/v1/organizations/${organizationId}/imports/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${access}` },
    body: form,
  });
  t.equal(res.status, 202);
  const { id } = (await res.json()) as { id: string };
  const progress = async () =>
    (
      await sql.query<{ status: string; processed_rows: number; created: number; failed_rows: number }>(
        'SELECT status, processed_rows, created, failed_rows FROM imports WHERE id = $1',
        [id],
      )
    ).rows[0]!;
  await until('a first committed batch', async () => (await progress()).processed_rows > 0);

  // Hold the import's row from a connection of its own (a transaction's view of pg_stat_activity would stay as it was
  // first read): the job's next batch waits for it (its first statement locks the row), then the process dies.
  const holder = new pg.Client({ connectionString: database.url });
  await holder.connect();
  t.teardown(() => holder.end());
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM imports WHERE id = $1 FOR UPDATE', [id]);
  const committed = (await progress()).processed_rows;
  t.ok(committed > 0 && committed < ROWS, `killed with ${committed} of ${ROWS} rows committed`);
  await until('the job to wait for the row', async () => {
    const { rows } = await sql.query(
      `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT status, processed_rows FROM imports%'`,
    );
    return rows.length > 0;
  });
  killGroup(server);
  await until('the process to be gone', async () => server.child.exitCode !== null || server.child.signalCode !== null);
  await holder.query('COMMIT');
  const companies = async () =>
    Number((await sql.query('SELECT count(*) FROM companies WHERE organization_id = $1', [organizationId])).rows[0].count);
  t.equal(await companies(), committed, 'only the committed batches are in: the waiting one died with its process');
  t.match(await progress(), { status: 'running', processed_rows: committed });

  // The new process's liveness sweep releases the dead worker's job; its next attempt starts after the committed rows.
  server = await startServer(env);
  const done = await until('the import to finish', async () => {
    const row = await progress();
    return row.status !== 'running' && row.status !== 'queued' && row;
  });
  t.match(done, { status: 'succeeded', processed_rows: ROWS, created: ROWS, failed_rows: 0 });
  t.equal(await companies(), ROWS, 'every row once');
  const { rows: repeated } = await sql.query('SELECT name FROM companies WHERE organization_id = $1 GROUP BY name HAVING count(*) > 1', [
    organizationId,
  ]);
  t.same(repeated, [], 'no row written twice');
  const codes = await sql.query('SELECT count(DISTINCT customer_code) AS n FROM companies WHERE organization_id = $1', [organizationId]);
  t.equal(Number(codes.rows[0].n), ROWS, 'each company its own customer code');
});
