// Worker liveness: a sweep releases the jobs of workers whose process is gone, and never those of a live worker.
import t from 'tap';
import pg from 'pg';
import { WorkerLiveness } from '../../src/jobs/liveness.js';
import { createTestDatabase } from '../helpers/database.js';

const database = await createTestDatabase();
t.teardown(() => database.drop());
const sql = new pg.Client({ connectionString: database.url });
await sql.connect();
t.teardown(() => sql.end());
const quiet = { warn() {} };

/** A job locked by `workerId` since `secondsAgo`: what a worker holding it looks like in graphile-worker's tables. */
async function lockedJob(key: string, workerId: string, secondsAgo: number): Promise<void> {
  await sql.query(`SELECT graphile_worker.add_job('liveness_probe', '{}'::json, job_key := $1)`, [key]);
  await sql.query(`UPDATE graphile_worker._private_jobs SET locked_by = $2, locked_at = now() - make_interval(secs => $3) WHERE key = $1`, [
    key,
    workerId,
    secondsAgo,
  ]);
}
const lockedBy = async (key: string) =>
  (await sql.query<{ locked_by: string | null }>('SELECT locked_by FROM graphile_worker.jobs WHERE key = $1', [key])).rows[0]?.locked_by;

t.test('only the jobs of workers nobody proves alive are released, and only once locked long enough', async (t) => {
  const processA = new WorkerLiveness(database.url, 60, quiet);
  const processB = new WorkerLiveness(database.url, 60, quiet);
  t.teardown(() => processA.close());
  t.teardown(() => processB.close());
  await processA.hold('worker-a');

  await lockedJob('alive-long', 'worker-a', 3600);
  await lockedJob('dead-long', 'worker-dead', 3600);
  await lockedJob('dead-recent', 'worker-dead-recent', 5);

  t.same(await processB.sweep(), ['worker-dead'], 'the dead worker whose job is older than the recovery time');
  t.equal(await lockedBy('dead-long'), null, 'its job is free for any worker');
  t.equal(await lockedBy('alive-long'), 'worker-a', "a live worker's job stays locked, however long it runs");
  t.equal(await lockedBy('dead-recent'), 'worker-dead-recent', 'a job locked for less than the recovery time waits');
  t.same(await processA.sweep(), [], "a process never releases its own workers' jobs");

  // Process A dies: its connection, and with it the proof of life, is gone.
  await processA.close();
  t.same(await processB.sweep(), ['worker-a'], "then its worker's job is released");
  t.equal(await lockedBy('alive-long'), null);
});

t.test('a worker that stopped cleanly lets go of its proof of life', async (t) => {
  const processA = new WorkerLiveness(database.url, 60, quiet);
  const processB = new WorkerLiveness(database.url, 60, quiet);
  t.teardown(() => processA.close());
  t.teardown(() => processB.close());
  await processA.hold('worker-c');
  await lockedJob('stopped', 'worker-c', 3600);
  t.same(await processB.sweep(), [], 'held');
  await processA.release('worker-c');
  t.same(await processB.sweep(), ['worker-c'], 'released');
});

t.test('a process holding several workers at once and sweeping meanwhile sends one query at a time', async (t) => {
  // pg warns (once per process) when a query is sent while another is running on the client; pg 9 will refuse it.
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  process.on('warning', onWarning);
  t.teardown(() => process.off('warning', onWarning));
  const processA = new WorkerLiveness(database.url, 60, quiet);
  const processB = new WorkerLiveness(database.url, 60, quiet);
  t.teardown(() => processA.close());
  t.teardown(() => processB.close());
  await lockedJob('concurrent-dead', 'worker-concurrent-dead', 3600);
  const [, , , swept] = await Promise.all([
    processA.hold('worker-c1'),
    processA.hold('worker-c2'),
    processA.hold('worker-c3'),
    processA.sweep(),
  ]);
  t.same(swept, ['worker-concurrent-dead'], 'the sweep ran beside the holds');
  const { rows } = await sql.query<{ taken: boolean }>(
    `SELECT bool_and(NOT pg_try_advisory_lock(hashtextextended('job-worker-alive:' || w, 0))) AS taken FROM unnest(ARRAY['worker-c1', 'worker-c2', 'worker-c3']) AS w`,
  );
  t.equal(rows[0]?.taken, true, 'every worker held is proved alive');
  await new Promise((resolve) => setImmediate(resolve));
  t.same(
    warnings.filter((message) => message.includes('already executing a query')),
    [],
    'no query was sent while another was running',
  );
});
