// WEB_CONCURRENCY=2 under steady keep-alive traffic: a server process killed with SIGTERM (no request lost) or SIGKILL is
// replaced while the other keeps serving; only a crash loop (five deaths within a minute) stops the instance, saying why.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { setupInstallation, ADMIN } from '../helpers/fixtures.js';
import { killGroup, startServer, type Started } from '../helpers/server.js';

/** The server processes: the descendants of the started group that run server.js under a server.js parent. */
function serverProcesses(server: Started): number[] {
  const children = (pid: number): number[] =>
    execFileSync('sh', ['-c', `pgrep -P ${pid} || true`])
      .toString()
      .split('\n')
      .filter(Boolean)
      .map(Number);
  const all: number[] = [];
  const walk = (pid: number) => {
    for (const child of children(pid)) {
      all.push(child);
      walk(child);
    }
  };
  walk(server.child.pid as number);
  const cmd = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  const parent = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
  return all.filter((pid) => cmd(pid).includes('server.js') && cmd(parent(pid)).includes('server.js'));
}

// Process starts are slow on a loaded machine: room for three of them and a drain.
t.setTimeout(300_000);
const { app, databaseUrl } = await buildTestApp(t, {}, { backgroundWorkers: false });
const { organizationId } = await setupInstallation(app);
const server = await startServer({ DATABASE_URL: databaseUrl, JWT_SECRET: 'x'.repeat(40), WEB_CONCURRENCY: '2' });
t.teardown(() => killGroup(server));
const token = await fetch(`${server.origin}/api/v1/auth/token/`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ username: ADMIN.username, password: ADMIN.password }),
});
const headers = { authorization: `Bearer ${((await token.json()) as { access: string }).access}`, 'content-type': 'application/json' };
const companies = `${server.origin}/api/v1/organizations/${organizationId}/companies/`;

/** Eight clients on keep-alive connections looping over list, search, create and me until stopped. */
function steadyTraffic() {
  let running = true;
  let served = 0;
  let slowest = 0;
  const failures: string[] = [];
  const requests: Array<[string, RequestInit]> = [
    [companies, { headers }],
    [`${companies}?search=acme`, { headers }],
    [companies, { method: 'POST', headers, body: JSON.stringify({ name: 'Acme' }) }],
    [`${server.origin}/api/v1/auth/me/`, { headers }],
  ];
  const client = async () => {
    for (let i = 0; running; i++) {
      const [url, init] = requests[i % requests.length] as [string, RequestInit];
      const started = Date.now();
      try {
        const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
        await res.arrayBuffer();
        slowest = Math.max(slowest, Date.now() - started);
        if (res.status < 300) served += 1;
        else failures.push(`${res.status}`);
      } catch (error) {
        failures.push(
          `${(error as Error).message} ${String((error as { cause?: { code?: string; message?: string } }).cause?.code ?? (error as { cause?: { message?: string } }).cause?.message ?? '')}`,
        );
      }
    }
  };
  const clients = Array.from({ length: 8 }, client);
  return {
    served: () => served,
    slowest: () => slowest,
    failures,
    stop: async () => {
      running = false;
      await Promise.all(clients);
    },
  };
}

/** Waits until the process started in place of `dead` serves (the supervisor says so); returns the milliseconds it took. */
async function replaced(dead: number, timeoutMs = 90_000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    const replacement = new RegExp(`Server process ${dead} exited \\([A-Z0-9]+\\): started (\\d+) in its place`).exec(server.output())?.[1];
    if (replacement && server.output().includes(`Server process ${replacement} is serving.`)) return Date.now() - started;
    await sleep(50);
  }
  throw new Error(`no replacement serving within ${timeoutMs} ms:\n${server.output()}`);
}

for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
  t.test(`a server process killed with ${signal} is replaced while the other serves`, async (t) => {
    const traffic = steadyTraffic();
    await sleep(1_000);
    const [victim] = serverProcesses(server);
    t.ok(victim, 'two server processes run');
    const before = traffic.served();
    process.kill(victim as number, signal);
    const ms = await replaced(victim as number);
    // A process start takes 2–3 s on a quiet machine; the bound leaves room for a loaded CI host.
    t.ok(ms < 90_000, `the replacement serves ${ms} ms after the kill (bound: 90 s)`);
    t.ok(traffic.served() > before, 'the other process served meanwhile');
    const servedBefore = traffic.served();
    await sleep(1_000);
    t.ok(traffic.served() > servedBefore, 'the instance serves after the replacement');
    await traffic.stop();
    // SIGTERM loses next to nothing: for half a second the draining process answers with `Connection: close`, so each
    // client reconnects (to the live process) after an answer, and only then does it stop accepting and drain; a
    // request that reaches it while it closes is still served. What HTTP/1.1 leaves is the race of a connection that
    // stayed idle through that half second (a client's spare one) and is closed the instant the client reuses it: at
    // most one request here. Closing at once, without the hand-off, lost 2-6 in every run.
    if (signal === 'SIGTERM') t.ok(traffic.failures.length <= 1, `at most one request fails (${traffic.failures.join(', ')})`);
    // SIGKILL loses only requests on connections to the dead process, which are reset: a few per client connection,
    // never a stream of failures.
    const unexpected = traffic.failures.filter((failure) => failure !== '503' && !/ECONNRESET|socket/i.test(failure));
    t.same(unexpected, [], `only drain answers or resets (${traffic.failures.length} failures)`);
    t.ok(
      traffic.failures.length <= 16,
      `${traffic.failures.length} failed of ${traffic.served()} (${signal}: ${[...new Set(traffic.failures)].join(', ')}); ` +
        `slowest answer ${traffic.slowest()} ms`,
    );
    t.match(server.output(), new RegExp(`Server process ${victim} exited \\((${signal}|0)\\): started \\d+ in its place`));
    t.equal(server.child.exitCode, null, 'the instance is still up');
  });
}

t.test('a crash loop stops the instance and says why', async (t) => {
  // Each replacement is killed as soon as it is started, until the instance gives up: the earlier tests' deaths may
  // or may not still count (a loaded machine took more than a minute over them), so at most five more are needed.
  let [victim] = serverProcesses(server);
  for (let n = 0; n < 5 && server.child.exitCode === null; n++) {
    process.kill(victim as number, 'SIGKILL');
    const deadline = Date.now() + 30_000;
    let next: string | undefined;
    while (!next && server.child.exitCode === null && Date.now() < deadline) {
      next = new RegExp(`Server process ${victim} exited \\(SIGKILL\\): started (\\d+) in its place`).exec(server.output())?.[1];
      await sleep(20);
    }
    if (!next) break;
    victim = Number(next);
  }
  const deadline = Date.now() + 60_000;
  while (server.child.exitCode === null && Date.now() < deadline) await sleep(100);
  t.equal(server.child.exitCode, 1, 'the instance exits 1');
  t.match(server.output(), /5 exits within 60 s, a crash loop: stopping the instance/);
});
