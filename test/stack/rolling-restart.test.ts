// The whole stack (`make stack`: PgBouncer, primary and replica, Redis, two instances behind HAProxy) under steady
// traffic through the load balancer: a rolling restart of both instances, then the replica stopped and restarted,
// each without one failed request.
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { startSignedInStack } from '../helpers/stack.js';

// Several processes start here (databases, PgBouncer, HAProxy, instances): room for a slow, loaded machine.
t.setTimeout(600_000);

const { stack, api, access, organizationId } = await startSignedInStack(t, 'stack-test');
const companies = `/organizations/${organizationId}/companies/`;

/** Eight clients on keep-alive connections, each creating a company then listing, until stopped. */
function steadyTraffic() {
  let running = true;
  const failures: string[] = [];
  let served = 0;
  const client = async (n: number) => {
    for (let i = 0; running; i++) {
      for (const [method, body] of [
        ['POST', { name: `client ${n} #${i}` }],
        ['GET', undefined],
      ] as const) {
        try {
          const res = await api(method, companies, body, access);
          if (res.status === (method === 'POST' ? 201 : 200)) served += 1;
          else failures.push(`${method} ${res.status} ${JSON.stringify(res.body)}`);
        } catch (error) {
          failures.push(`${method} ${(error as Error).message}`);
        }
      }
    }
  };
  const clients = Array.from({ length: 8 }, (_, n) => client(n));
  return {
    served: () => served,
    failures,
    stop: async () => {
      running = false;
      await Promise.all(clients);
    },
  };
}

t.test("the load balancer compresses the API's JSON reads in gzip, never an answer to a write", async (t) => {
  const headers = { authorization: `Bearer ${access}`, 'accept-encoding': 'gzip, br' };
  const created = await fetch(`${stack.origin}/api/v1${companies}`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Compressed at the edge', notes: 'A long note. '.repeat(200) }),
  });
  t.equal(created.status, 201);
  t.equal(created.headers.get('content-encoding'), null, 'a write: as it is');
  const company = (await created.json()) as { id: string };
  const read = await fetch(`${stack.origin}/api/v1${companies}${company.id}/`, { headers });
  t.equal(read.status, 200);
  t.equal(read.headers.get('content-encoding'), 'gzip', 'a read: gzip');
  t.match(await read.json(), { id: company.id, name: 'Compressed at the edge' });
  const document = await fetch(`${stack.origin}/openapi.json`, { headers });
  t.equal(document.headers.get('content-encoding'), 'br', "the service's own compression passes as it is");
  t.match(await document.json(), { openapi: /^3\.1/ });
});

t.test('a rolling restart of both instances drops no request', async (t) => {
  const traffic = steadyTraffic();
  await sleep(1_000);
  for (const instance of stack.instances) {
    const before = traffic.served();
    t.equal(await instance.stop(), 0, `${instance.name} drained and exited 0`);
    t.ok(traffic.served() > before, `the other instance served while ${instance.name} drained`);
    await instance.start();
    // HAProxy takes it back after two passing checks (500 ms apart, later on a loaded machine): only then may the
    // other one stop.
    await stack.waitUntilServing(instance.name);
  }
  await sleep(500);
  await traffic.stop();
  t.same(traffic.failures, [], `no failed request out of ${traffic.served()}`);
  t.ok(traffic.served() > 100, `${traffic.served()} requests served`);
});

t.test('stopping and restarting the replica drops no request', async (t) => {
  const traffic = steadyTraffic();
  await sleep(500);
  await stack.replica.stop();
  await sleep(2_000);
  await stack.replica.start();
  await sleep(2_000);
  await traffic.stop();
  t.same(traffic.failures, [], `no failed request out of ${traffic.served()}`);
});
