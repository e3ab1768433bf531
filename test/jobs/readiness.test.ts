// /readyz answers 503 while the job queue's schema is missing (no email or run could be queued), 200 once installed.
import t from 'tap';
import { installJobQueue } from '../../src/jobs/install.js';
import { buildTestApp, json } from '../helpers/app.js';

const { app, databaseUrl } = await buildTestApp(t, {}, { backgroundWorkers: false });
/** Past the readiness answer's one-second cache. */
const afterCache = () => new Promise((resolve) => setTimeout(resolve, 1_100));

t.test('without the graphile_worker schema the service is not ready; installing it makes it ready', async (t) => {
  t.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200, 'ready with the schema');
  await app.pg.query('DROP SCHEMA graphile_worker CASCADE');
  await afterCache();
  const missing = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(missing.statusCode, 503);
  t.match(json(missing), { code: 'migrations_pending', detail: /1 database migration\(s\) or schema\(s\)/ });

  await installJobQueue(databaseUrl);
  await afterCache();
  t.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200, 'ready again');
});
