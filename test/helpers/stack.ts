// The whole stack (`make stack`) started for one test file, with its administrator signed in: what every stack test sets up first.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { startStack } from '../../scripts/stack/stack.js';

/** A JSON answer of the stack, its body undefined when it was not JSON. */
export interface StackAnswer {
  status: number;
  body: unknown;
}

/**
 * Starts the stack with two instances behind HAProxy in a scratch directory (removed with the test), runs the
 * one-time setup through the load balancer and signs the administrator in. The workspace's request budget is lifted:
 * the stack tests send steady traffic from one user.
 */
export async function startSignedInStack(t: Test, name: string) {
  const dir = await mkdtemp(path.join(tmpdir(), `crm-${name}-`));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const stack = await startStack({ dir, instances: 2, env: { RATE_LIMIT_WORKSPACE_PER_MINUTE: '1000000000' } });
  t.teardown(stack.stop);

  const api = async (method: string, url: string, body?: unknown, access?: string): Promise<StackAnswer> => {
    const res = await fetch(`${stack.origin}/api/v1${url}`, {
      method,
      headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(access ? { authorization: `Bearer ${access}` } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: await res.json().catch(() => undefined) };
  };
  const setup = await api('POST', '/setup/', {
    setup_token: stack.setupToken,
    username: 'admin',
    email: 'admin@example.test',
    password: 'a long stack password',
    organization_name: 'Acme',
    organization_slug: 'acme',
  });
  if (setup.status !== 201) throw new Error(`setup failed: ${JSON.stringify(setup)}`);
  const { access } = (await api('POST', '/auth/token/', { username: 'admin', password: 'a long stack password' })).body as {
    access: string;
  };
  const me = (await api('GET', '/auth/me/', undefined, access)).body as { organizations: Array<{ id: string }> };
  const organizationId = me.organizations[0]?.id;
  if (organizationId === undefined) throw new Error('the administrator has no workspace');
  return { stack, api, access, organizationId };
}
