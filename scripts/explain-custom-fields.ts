// Prints EXPLAIN (ANALYZE, BUFFERS) of a custom number range filter and a custom number sort on a seeded workspace,
// before and after a per-workspace expression index built CONCURRENTLY (docs/records.md, custom field ranges and sorts).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres.js';
import { applyMigrations } from '../src/db/migrate.js';
import { insertCompanies, log } from './bench-kit.js';

const ROWS = Number(process.env.EXPLAIN_ROWS ?? 1_000_000);
const workDir = await mkdtemp(path.join(tmpdir(), 'crm-explain-fields-'));
let postgres: RunningPostgres | undefined;
try {
  postgres = await startEmbeddedPostgres({ dataDir: path.join(workDir, 'cluster') });
  await applyMigrations(postgres.url);
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  const { rows } = await client.query<{ id: string }>(
    `INSERT INTO organizations (id, name, slug, updated_at) VALUES (gen_random_uuid(), 'Explain', 'explain', now()) RETURNING id`,
  );
  const org = rows[0]!.id;
  log(`seeding ${ROWS.toLocaleString('en')} companies with custom values`);
  await client.query(insertCompanies(org, 0, ROWS));
  // seats uniform in 0..9999 (a range of 100 matches 1 %), renewal over 100 days (one day matches 1 %), tier of 10.
  await client.query(
    `UPDATE companies SET custom_fields = jsonb_build_object('seats', (hashtext(id::text) & 2147483647) % 10000,
       'renewal', (date '2027-01-01' + (hashtext(id::text || 'r') & 2147483647) % 100)::text,
       'tier', 't' || (hashtext(id::text || 't') & 2147483647) % 10)`,
  );
  await client.query('VACUUM (ANALYZE) companies');
  const size = await client.query(`SELECT pg_size_pretty(pg_total_relation_size('companies')) AS total,
    pg_size_pretty(pg_relation_size('companies_custom_fields_idx')) AS gin`);
  console.log(`companies: ${ROWS} rows, table+indexes ${size.rows[0].total}, GIN jsonb_path_ops ${size.rows[0].gin}`);
  const queries: [string, string][] = [
    [
      'range: custom.seats >= 5000 AND < 5100 (1 %), first page',
      `SELECT id FROM companies WHERE organization_id = $1 AND archived_at IS NULL
         AND ((custom_fields ->> 'seats')::numeric) >= 5000 AND ((custom_fields ->> 'seats')::numeric) < 5100
       ORDER BY created_at DESC, id DESC LIMIT 51`,
    ],
    [
      'sort: custom.seats asc, first page',
      `SELECT id FROM companies WHERE organization_id = $1 AND archived_at IS NULL
       ORDER BY ((custom_fields ->> 'seats')::numeric) ASC NULLS LAST, id ASC LIMIT 51`,
    ],
    [
      'equality: custom.tier eq t3 (10 %), first page',
      `SELECT id FROM companies WHERE organization_id = $1 AND archived_at IS NULL AND custom_fields @> '{"tier":"t3"}'
       ORDER BY created_at DESC, id DESC LIMIT 51`,
    ],
  ];
  const explain = async (label: string) => {
    for (const [name, sql] of queries) {
      await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql.replace('$1', `'${org}'`)}`); // warm
      const plan = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql.replace('$1', `'${org}'`)}`);
      console.log(`\n### ${label}: ${name}\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}`);
    }
  };
  await explain('today');
  const started = Date.now();
  await client.query(
    `CREATE INDEX CONCURRENTLY explain_seats_idx ON companies (((custom_fields ->> 'seats')::numeric), id)
       WHERE organization_id = '${org}'`,
  );
  console.log(
    `\nCREATE INDEX CONCURRENTLY (partial, this workspace): ${((Date.now() - started) / 1000).toFixed(1)} s, ${
      (await client.query(`SELECT pg_size_pretty(pg_relation_size('explain_seats_idx')) AS s`)).rows[0].s
    }`,
  );
  await explain('with the expression index');
  await client.end();
} finally {
  await postgres?.stop();
  await rm(workDir, { recursive: true, force: true });
}
