// Whether this process may take traffic: every migration applied and the job queue installed, asked of the database.
import type pg from 'pg';
import { pendingMigrations } from '../../db/migrate.js';
import { jobQueueInstalled } from '../../jobs/install.js';
import { migrationsDir } from '../../lib/project-root.js';

const READINESS_CACHE_MS = 1000;

export function createHealthService(deps: { pool: pg.Pool }) {
  const { pool } = deps;
  /** What is missing: pending migrations, and the job queue's schema (installed at start, after them). */
  const missing = async () => {
    const pending = await pendingMigrations(pool, migrationsDir);
    return (await jobQueueInstalled(pool)) ? pending : [...pending, 'the job queue schema'];
  };
  /**
   * The answer is computed at most once a second and shared by every caller meanwhile, through the app's pool: an
   * unauthenticated flood then costs no connection beyond the pool and a single query per second.
   */
  let readiness: { at: number; result: Promise<string[] | Error> } | undefined;
  return {
    /** What is not in place yet (empty: ready), or the error that kept the database from answering. */
    missing(): Promise<string[] | Error> {
      const now = Date.now();
      if (!readiness || now - readiness.at >= READINESS_CACHE_MS) {
        readiness = { at: now, result: missing().catch((error: Error) => error) };
      }
      return readiness.result;
    },
  };
}
