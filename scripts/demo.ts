// `make demo`: the demo workspace on DATABASE_URL or the embedded database, for trying the API in Swagger UI; not in production.
import { loadBootstrapConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { runningEmbeddedUrl, startEmbeddedPostgres } from '../src/db/embedded-postgres.js';
import { applyMigrations } from '../src/db/migrate.js';
import { DEMO, seedDemo } from '../src/modules/installation/demo-data.js';

const { nodeEnv, dataDir } = loadBootstrapConfig(process.env);
if (nodeEnv === 'production') {
  console.error('make demo refuses to run with NODE_ENV=production: it creates a user with a published password.');
  process.exit(2);
}
const external = process.env.DATABASE_URL || undefined;
const running = external ? null : await runningEmbeddedUrl(dataDir);
const started = external || running ? undefined : await startEmbeddedPostgres({ dataDir });
const url = external ?? running ?? (started?.url as string);
try {
  await applyMigrations(url);
  const database = openDatabase(url, 2, () => {});
  try {
    const result = await seedDemo(database.db, database.pool);
    const { user, workspace, companies, contacts, deals, tasks } = result.created;
    const made = [
      user && 'the demo user',
      workspace && 'the workspace',
      companies && `${companies} companies`,
      contacts && `${contacts} contacts`,
      deals && `${deals} deals`,
      tasks && `${tasks} tasks`,
    ].filter(Boolean);
    console.log(made.length > 0 ? `created ${made.join(', ')}` : 'the demo data is already there: nothing created');
    console.log(`demo workspace "${DEMO.workspaceSlug}" (organization_id ${result.organizationId})`);
    console.log(
      `sign in: POST /api/v1/auth/token/ with {"username": "${DEMO.username}", "password": "${DEMO.password}"} (or Authorize in Swagger UI at /docs)`,
    );
  } finally {
    await database.close();
  }
} finally {
  await started?.stop();
}
