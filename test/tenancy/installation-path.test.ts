// The installation path (docs/tenant-isolation.md) is reached from the files listed here only: a new use of the
// owner's handles, which row-level security does not bind, fails this test until it is listed here and in the doc.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';

const SRC = path.resolve(import.meta.dirname, '../../src');

/**
 * The owner's handles: the app's `db`/`pg` decorations, and the owner's URL from which the job queue, the workers'
 * locks, the import thread and the start-up open their own connections.
 */
const INSTALLATION_PATH = /\bapp\.(db|pg)\b|sessionDatabaseUrl\(|\.databaseUrl\b|\.databaseDirectUrl\b/;

/** Each file that reaches the installation path, with what it does there (as docs/tenant-isolation.md lists them). */
const USES: Record<string, string> = {
  'app.ts':
    'composes the installation-wide services (accounts, sign-in, setup, workspaces, installation API, the console, readiness) over it',
  'config.ts': 'declares DATABASE_URL and DATABASE_DIRECT_URL',
  'jobs/queue.ts': 'the job queue (graphile-worker) and its workers',
  'modules/imports/import-thread.ts': 'the CSV import thread, which writes the workspace of each import job',
  'plugins/auth.ts': 'authentication: the user behind a token',
  'plugins/db.ts': 'opens the handles',
  'plugins/idempotency.ts': 'stored answers of idempotent requests',
  'plugins/metrics.ts': 'pool metrics',
  'plugins/read-replica.ts': "the replica's health, measured against the primary's WAL position",
  'records/list-routes.ts': "the audit log's entry of a CRM record's deletion",
  'plugins/tenancy.ts': "sign-in's memberships lookup and API key authentication, before any workspace is known",
  'services.ts': "the change feed's LISTEN connection (notifications only; the events are read on the serving pool)",
  'server.ts': 'migrations, the job queue schema, the serving role, the start-up banner',
  'workers.ts':
    "the email and import workers and their liveness locks, the custom fields' index jobs and their sweep, the automation run dispatcher's claims across workspaces",
};

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.relative(SRC, path.join(entry.parentPath, entry.name)))
    .filter((file) => !file.startsWith('generated/'));
}

t.test('the installation path is used where it is listed, and nowhere else', async (t) => {
  const found: string[] = [];
  for (const file of await sourceFiles(SRC)) {
    if (INSTALLATION_PATH.test(await readFile(path.join(SRC, file), 'utf8'))) found.push(file);
  }
  t.same(found.sort(), Object.keys(USES).sort());
});

t.test('docs/tenant-isolation.md names every file of the installation path', async (t) => {
  const doc = await readFile(path.resolve(SRC, '../docs/tenant-isolation.md'), 'utf8');
  for (const file of Object.keys(USES)) t.ok(doc.includes(`src/${file}`), file);
});
