// Gives a test file its own database, copied from the migrated template that `npm test` prepares (TEST_DATABASE_URL).
import { randomBytes } from 'node:crypto';
import { adminQuery, databaseUrl } from '../../src/db/server-admin.js';

export interface TestDatabase {
  url: string;
  /** Drops the database, disconnecting whoever is still on it: close the app under test first. */
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** Start from an empty database (PostgreSQL's template0) instead of the migrated template. */
  empty?: boolean;
}

export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const templateUrl = process.env.TEST_DATABASE_URL;
  if (!templateUrl) {
    throw new Error(
      'TEST_DATABASE_URL is not set: run the tests with `npm test` (add tap arguments after `--`), ' +
        'which starts PostgreSQL and prepares the migrated template database',
    );
  }
  const template = options.empty ? 'template0' : decodeURIComponent(new URL(templateUrl).pathname.slice(1));
  const name = `test_${randomBytes(6).toString('hex')}`;
  await adminQuery(templateUrl, `CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  let dropping: Promise<void> | undefined;
  return {
    url: databaseUrl(templateUrl, name),
    drop: () => (dropping ??= adminQuery(templateUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
  };
}
