// `make backup` and `make restore-test` on a real embedded cluster: a backup taken while rows are being written restores
// with every row committed before it began and exactly the rows of its manifest; a mismatch fails and is recorded.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { restoreTest, takeBackup, type BackupManifest } from '../../src/db/embedded-backup.js';

const dataDir = await mkdtemp(path.join(tmpdir(), 'crm-backup-test-'));
const backupDir = path.join(dataDir, 'backups');
const server = await startEmbeddedPostgres({ dataDir });
t.teardown(async () => {
  await server.stop();
  await rm(dataDir, { recursive: true, force: true });
});
await applyMigrations(server.url);
const client = new pg.Client({ connectionString: server.url });
await client.connect();
t.teardown(() => client.end());
const organizationId = (
  await client.query<{ id: string }>(
    `INSERT INTO organizations (id, name, slug, updated_at) VALUES (gen_random_uuid(), 'Acme', 'acme', now()) RETURNING id`,
  )
).rows[0]?.id;

/** Inserts companies one by one until stopped, counting those whose commit was acknowledged. */
function startWriter() {
  let acknowledged = 0;
  let running = true;
  const writer = new pg.Client({ connectionString: server.url });
  const done = (async () => {
    await writer.connect();
    while (running) {
      await writer.query(`INSERT INTO companies (id, organization_id, name, updated_at) VALUES (gen_random_uuid(), $1, 'Row', now())`, [
        organizationId,
      ]);
      acknowledged += 1;
    }
    await writer.end();
  })();
  return {
    acknowledged: () => acknowledged,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

const events = async () =>
  (
    await client.query<{ kind: string; status: string; reported_by: string }>(
      `SELECT kind, status, reported_by FROM backup_events ORDER BY created_at, kind`,
    )
  ).rows;

t.test('a backup taken under writes restores with every committed row', async (t) => {
  const writer = startWriter();
  while (writer.acknowledged() < 200) await new Promise((resolve) => setTimeout(resolve, 10));
  const before = writer.acknowledged();
  const target = await takeBackup({ dataDir, backupDir });
  const after = writer.acknowledged();
  await writer.stop();
  t.ok(after > before, `writes went on during the backup (${after - before} rows)`);

  const manifest = JSON.parse(await readFile(path.join(target, 'manifest.json'), 'utf8')) as BackupManifest;
  const companies = manifest.counts.companies ?? -1;
  t.ok(companies >= before, `every row acknowledged before the backup began is in it (${companies} ≥ ${before})`);
  t.ok(companies <= after + 1, 'and nothing that was not written');
  t.ok(manifest.migrations.length >= 12, 'the applied migrations are recorded');
  t.equal(manifest.counts.organizations, 1);

  const result = await restoreTest({ dataDir, backup: target });
  t.same(result, { ok: true, problems: [] }, 'the restored copy holds exactly the manifest rows, migrations current');
  t.same(
    (await events()).map((e) => [e.kind, e.status, e.reported_by]),
    [
      ['backup', 'success', 'make backup'],
      ['restore_test', 'success', 'make restore-test'],
    ],
  );

  // A manifest that does not match its data fails the restore test, and the failure is recorded.
  await writeFile(
    path.join(target, 'manifest.json'),
    JSON.stringify({ ...manifest, counts: { ...manifest.counts, companies: companies + 1 } }),
  );
  const mismatch = await restoreTest({ dataDir, backup: target });
  t.equal(mismatch.ok, false);
  t.match(mismatch.problems.join('\n'), /companies: \d+ rows, the manifest says \d+/);
  t.same((await events()).at(-1), { kind: 'restore_test', status: 'failure', reported_by: 'make restore-test' });
});
