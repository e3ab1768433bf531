// Starts a real Redis (Debian's redis-server) on a free port for one test file; without one, CI fails and a local run skips loudly.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import type { Test } from 'tap';
import { freePort, waitForPort } from './net.js';

const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? '/usr/bin/redis-server';

export interface TestRedis {
  url: string;
  port: number;
  /** Stops the server (a simulated outage); `start()` brings it back on the same port, empty. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

/**
 * Returns a running Redis, or undefined after skipping the test when redis-server is not installed. Under CI the
 * absence is an error: CI installs it (.ci/run), and a green run must never hide skipped Redis tests.
 */
export async function startTestRedis(t: Test): Promise<TestRedis | undefined> {
  if (!existsSync(REDIS_SERVER)) {
    const message = `redis-server not found at ${REDIS_SERVER}: install it (apt-get install redis-server) to run the Redis tests`;
    if (process.env.CI) throw new Error(message);
    console.error(`\n*** WARNING: ${message}; SKIPPING them ***\n`);
    t.test('tests that need Redis', { skip: message }, async () => {});
    return undefined;
  }
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    // No persistence: every start is an empty Redis, like a restarted cache.
    child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await waitForPort(port);
  };
  const stop = async () => {
    if (!child || child.exitCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };
  await start();
  t.teardown(stop);
  return { url: `redis://127.0.0.1:${port}`, port, stop, start };
}
