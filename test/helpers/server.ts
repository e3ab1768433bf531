// Starts the built server (`npm start`, dist/src/server.js) as a real process on a free port, and stops it.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { projectRoot } from '../../src/lib/project-root.js';
import { freePort } from './net.js';

if (!existsSync(path.join(projectRoot, 'dist', 'src', 'server.js'))) {
  throw new Error('dist/src/server.js is missing: run `npm run build` (make test does) before this test');
}

export interface Started {
  child: ChildProcess;
  origin: string;
  output: () => string;
}

/** Server processes under test serve loops of requests to one workspace: the budgets get their own tests. */
const LOAD_BUDGETS = { RATE_LIMIT_WORKSPACE_PER_MINUTE: '1000000', RATE_LIMIT_API_KEY_PER_MINUTE: '1000000' };

export async function startServer(env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  let output = '';
  const child = spawn('npm', ['start', '--silent'], {
    cwd: projectRoot,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...LOAD_BUDGETS,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Own process group, so a failed test can kill npm and the server together.
    detached: true,
  });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}):\n${output}`);
    const ready = await fetch(`${origin}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    // Ready, and the start-up banner (written just after listen) is out.
    if (ready === 200 && output.includes('Swagger UI:')) return { child, origin, output: () => output };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`server not ready within 60 s:\n${output}`);
}

/** Last resort at teardown: nothing of a failed test may keep running. */
export function killGroup(server: Started) {
  try {
    process.kill(-server.child.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}

export async function stop(server: Started): Promise<number | null> {
  server.child.kill('SIGTERM');
  const [code] = (await once(server.child, 'exit')) as [number | null];
  return code;
}

/** JSON calls to a started server's API: `{status, body}`, with an optional Bearer token. */
export function apiClient(server: { origin: string }) {
  return async (method: string, path: string, body?: unknown, access?: string) => {
    const res = await fetch(`${server.origin}/api/v1${path}`, {
      method,
      headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(access ? { authorization: `Bearer ${access}` } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
}

/**
 * Polls `probe` every `intervalMs` until it answers something truthy, and answers that; fails naming `what` after
 * `timeoutMs`. For states another process reaches in its own time (a job finished, a process gone).
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
