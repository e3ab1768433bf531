// Scenery for the CRM tests: two workspaces, a member and a viewer in the first, a member of the second, and
// request helpers for their organization-scoped endpoints.
import type { LightMyRequestResponse } from 'fastify';
import type { App } from '../../src/app.js';
import { json } from '../helpers/app.js';
import { createUser, type SignedIn } from '../helpers/fixtures.js';

export interface Workspace {
  id: string;
  /** `GET|POST|PATCH|DELETE /api/v1/organizations/<id>/<path>` as `user`. */
  call(user: SignedIn, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown): Promise<LightMyRequestResponse>;
}

export interface CrmWorkspaces {
  a: Workspace;
  b: Workspace;
  /** member of A (MANAGE_CRM) */
  memberA: SignedIn;
  /** viewer of A (VIEW_CRM only) */
  viewerA: SignedIn;
  /** member of B, no membership in A */
  memberB: SignedIn;
}

/** Request helpers for the organization `id`'s endpoints. */
export function workspace(app: App, id: string): Workspace {
  return {
    id,
    call: (user, method, path, payload) =>
      app.inject({
        method,
        url: `/api/v1/organizations/${id}/${path}`,
        headers: user.headers,
        ...(payload === undefined ? {} : { payload: payload as object }),
      }),
  };
}

export async function crmWorkspaces(app: App): Promise<CrmWorkspaces> {
  const [orgA, orgB] = await Promise.all(['alpha', 'beta'].map((slug) => app.db.organization.create({ data: { name: slug, slug } })));
  const [memberA, viewerA, memberB] = await Promise.all([
    createUser(app, { membership: { organizationId: orgA!.id, role: 'member' } }),
    createUser(app, { membership: { organizationId: orgA!.id, role: 'viewer' } }),
    createUser(app, { membership: { organizationId: orgB!.id, role: 'member' } }),
  ]);
  return { a: workspace(app, orgA!.id), b: workspace(app, orgB!.id), memberA, viewerA, memberB };
}

/** Creates a record through the API and returns its body; fails the test on anything but 201. */
export async function created<T = any>(response: Promise<LightMyRequestResponse>): Promise<T> {
  const res = await response;
  if (res.statusCode !== 201) throw new Error(`expected 201, got ${res.statusCode}: ${res.body}`);
  return json<T>(res);
}

/**
 * Follows `Link: rel="next"` from `firstUrl` (a path under the workspace) and returns every page's ids; `between`
 * runs after each page (e.g. to insert records meanwhile).
 */
export async function walkPages(
  ws: Workspace,
  user: SignedIn,
  firstUrl: string,
  between: (page: number) => Promise<void> = async () => {},
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let url: string | undefined = firstUrl;
  let pages = 0;
  while (url) {
    const res = await ws.call(user, 'GET', url);
    if (res.statusCode !== 200) throw new Error(`page ${pages + 1}: ${res.statusCode} ${res.body}`);
    ids.push(...json<Array<{ id: string }>>(res).map((record) => record.id));
    pages += 1;
    const link = res.headers.link as string | undefined;
    const next = link ? /<([^>]+)>; rel="next"/.exec(link)?.[1] : undefined;
    url = next?.replace(`/api/v1/organizations/${ws.id}/`, '');
    if (url) await between(pages);
  }
  return { ids, pages };
}
