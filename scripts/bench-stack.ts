// `make bench-stack`: list and create through the stack (HAProxy → instance → PgBouncer, replica reads) against one
// instance straight on PostgreSQL, on this machine; prints throughput, latency and the machine's CPU per request.
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../test/helpers/net.js';
import { serviceInstance, startStack } from './stack/stack.js';
import { wrk } from './wrk.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 16;
const SEED = 10_000;

/** CPU seconds the whole machine spent busy (all cores), from /proc/stat. */
async function busySeconds(): Promise<number> {
  const [cpu] = (await readFile('/proc/stat', 'utf8')).split('\n');
  const fields = (cpu ?? '').trim().split(/\s+/).slice(1).map(Number);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return (fields.reduce((a, b) => a + b, 0) - idle) / 100;
}

const dir = await mkdtemp(path.join(tmpdir(), 'crm-bench-stack-'));
const stack = await startStack({
  dir,
  instances: 2,
  env: { RATE_LIMIT_WORKSPACE_PER_MINUTE: '1000000000' },
  log: (line) => console.error(line),
});
const direct = serviceInstance('direct', await freePort(), {
  ...stack.env,
  DATABASE_URL: stack.primary.url,
  DATABASE_DIRECT_URL: undefined,
  DATABASE_REPLICA_URL: undefined,
  REDIS_URL: undefined,
});
try {
  await direct.start();
  const post = (url: string, body: unknown, token?: string) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<Record<string, unknown>>);
  await post(`${stack.origin}/api/v1/setup/`, {
    setup_token: stack.setupToken,
    username: 'bench',
    email: 'bench@example.test',
    password: 'a long bench password',
    organization_name: 'Bench',
    organization_slug: 'bench',
  });
  const { access } = (await post(`${stack.origin}/api/v1/auth/token/`, { username: 'bench', password: 'a long bench password' })) as {
    access: string;
  };
  const client = new pg.Client({ connectionString: stack.primary.url });
  await client.connect();
  const org = (await client.query<{ id: string }>(`SELECT id FROM organizations WHERE slug = 'bench'`)).rows[0]?.id;
  await client.query(
    `INSERT INTO companies (id, organization_id, name, updated_at) SELECT gen_random_uuid(), $1, 'Seed ' || i, now() FROM generate_series(1, ${SEED}) i`,
    [org],
  );
  await client.end();
  // The replica has replayed the seed once a list through it shows the newest rows (the bench user wrote nothing since).
  await new Promise((resolve) => setTimeout(resolve, 2_000));

  const targets = [
    ['through HAProxy (2 instances, PgBouncer, replica reads)', stack.origin],
    ['one stack instance, without HAProxy', `http://127.0.0.1:${stack.instances[0]?.port}`],
    ['one instance straight on PostgreSQL', `http://127.0.0.1:${direct.port}`],
  ] as const;
  const lines: string[] = [];
  for (const scenario of ['list', 'create'] as const) {
    for (const [name, origin] of targets) {
      const url = `${origin}/api/v1/organizations/${org}/companies/`;
      const options = {
        url,
        connections: CONNECTIONS,
        seconds: SECONDS,
        method: scenario === 'list' ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${access}` },
        ...(scenario === 'create' ? { body: JSON.stringify({ name: 'Bench Co' }) } : {}),
      };
      await wrk({ ...options, seconds: 2 });
      const before = await busySeconds();
      const result = await wrk(options);
      const busy = (await busySeconds()) - before;
      const rps = result.requests / (result.duration_us / 1e6);
      lines.push(
        `| ${scenario} | ${name} | ${rps.toFixed(0)} | ${(result.p50_us / 1000).toFixed(1)} | ${(result.p99_us / 1000).toFixed(1)} | ` +
          `${((busy / result.requests) * 1e6).toFixed(0)} | ${result.errors + result.non2xx} |`,
      );
      console.error(lines.at(-1));
    }
  }
  console.log(
    [
      `wrk -t1 -c${CONNECTIONS} -d${SECONDS}s after a 2 s warm-up; ${SEED} companies; every part on this machine's cores`,
      '| scenario | path | req/s | p50 ms | p99 ms | machine CPU µs/request (all processes) | errors |',
      '|---|---|---|---|---|---|---|',
      ...lines,
    ].join('\n'),
  );
} finally {
  await direct.stop();
  await stack.stop();
  await rm(dir, { recursive: true, force: true });
}
