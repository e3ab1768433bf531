// The job queue's schema install: offline from the npm package, idempotent, and an upgrade gives waiting rows their jobs.
import pg from 'pg';
import t from 'tap';
import { applyMigrations } from '../../src/db/migrate.js';
import { installJobQueue } from '../../src/jobs/install.js';
import { JOBS } from '../../src/jobs/queue.js';
import { createTestDatabase } from '../helpers/database.js';
import { jobOf, storedJobOf } from '../helpers/jobs.js';

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

t.test('on an empty database: our migrations, then graphile-worker installs its schema; running it again changes nothing', async (t) => {
  const db = await createTestDatabase({ empty: true });
  t.teardown(db.drop);
  await applyMigrations(db.url);
  t.equal(await installJobQueue(db.url), 0, 'nothing waiting');
  const schema = async () =>
    withClient(db.url, async (client) => {
      const { rows } = await client.query<{ n: number; add_job: boolean }>(
        `SELECT (SELECT count(*)::int FROM graphile_worker.migrations) AS n,
                to_regprocedure('graphile_worker.add_job(text, json, text, timestamptz, integer, text, integer, text[], text)')
                  IS NOT NULL AS add_job`,
      );
      return rows[0]!;
    });
  const installed = await schema();
  t.ok(installed.n > 0, `graphile-worker's migrations are recorded (${installed.n})`);
  t.ok(installed.add_job, 'graphile_worker.add_job exists');
  t.equal(await installJobQueue(db.url), 0);
  t.same(await schema(), installed, 'a second install applies nothing');
});

t.test('rows written before the job queue get a job at install; rows done, or with a job already, do not', async (t) => {
  const db = await createTestDatabase();
  t.teardown(db.drop);
  const rows = await withClient(db.url, async (client) => {
    const insertEmail = (status: string) =>
      client.query<{ id: string }>(
        `INSERT INTO email_outbox (id, to_address, subject, text_body, status)
         VALUES (gen_random_uuid(), 'a@example.test', 's', 'secret link', $1::outbox_status) RETURNING id`,
        [status],
      );
    const pending = (await insertEmail('pending')).rows[0]!.id;
    const sent = (await insertEmail('sent')).rows[0]!.id;
    const reset = (
      await client.query<{ id: string }>(
        `INSERT INTO password_reset_requests (id, email) VALUES (gen_random_uuid(), 'b@example.test') RETURNING id`,
      )
    ).rows[0]!.id;
    return { pending, sent, reset };
  });

  const log: string[] = [];
  t.equal(await installJobQueue(db.url, (msg) => log.push(msg)), 2, 'the pending email and the reset request');
  t.match(log, [/queued 2 waiting row/]);
  await withClient(db.url, async (client) => {
    t.same((await storedJobOf(client, JOBS.email, rows.pending))?.payload, { id: rows.pending }, 'the email: its id only');
    t.equal((await jobOf(client, JOBS.email, rows.pending))?.max_attempts, JOBS.email.attempts + 1);
    t.same((await storedJobOf(client, JOBS.passwordReset, rows.reset))?.payload, { id: rows.reset }, 'the reset request: its id only');
    t.equal(await jobOf(client, JOBS.email, rows.sent), undefined, 'a sent email gets none');
    // A job in progress (locked) is never doubled by an install on another instance.
    await client.query(`UPDATE graphile_worker._private_jobs SET locked_at = now(), locked_by = 'a-live-worker' WHERE key = $1`, [
      `${JOBS.email.task}:${rows.pending}`,
    ]);
  });
  t.equal(await installJobQueue(db.url), 0, 'every waiting row has its job');
  await withClient(db.url, async (client) => {
    const { rows: jobs } = await client.query('SELECT id FROM graphile_worker.jobs');
    t.equal(jobs.length, 2, 'no second job');
  });
});

t.test('an upgrade removes the jobs an older version queued per automation run: runs are claimed from their table', async (t) => {
  const db = await createTestDatabase();
  t.teardown(db.drop);
  await withClient(db.url, async (client) => {
    for (const id of ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002']) {
      await client.query(
        `SELECT graphile_worker.add_job('automation_run', json_build_object('id', $1::text), job_key := 'automation_run:' || $1)`,
        [id],
      );
    }
    await client.query(`SELECT graphile_worker.add_job('email_outbox', '{"id": "x"}'::json, job_key := 'email_outbox:x')`);
  });
  const log: string[] = [];
  await installJobQueue(db.url, (msg) => log.push(msg));
  t.match(log, [/removed 2 job\(s\) of automation runs/]);
  await withClient(db.url, async (client) => {
    const { rows } = await client.query<{ task_identifier: string }>('SELECT task_identifier FROM graphile_worker.jobs');
    t.same(
      rows.map((row) => row.task_identifier),
      ['email_outbox'],
      'the other jobs stay',
    );
  });
});
