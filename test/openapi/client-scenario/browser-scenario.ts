// A web app's session through the SDK that @hey-api/openapi-ts generates into ./sdk/, bundled for the browser and run
// in a page of another origin than the API's (so every call is a CORS request). Not compiled with the project (./sdk/
// exists only in the browser test's temp dir, where this file is copied); its checks go back to tap as data.
import { createClient, createConfig, type Client } from './sdk/client/index.js';
import {
  createCompany,
  createContact,
  createToken,
  getCompany,
  getMe,
  listCompanies,
  logout,
  refreshToken,
  updateCompany,
  type Problem,
} from './sdk/index.js';

/** One check, compared by the test in Node: `found` deep-equal to `wanted`. */
export interface Check {
  message: string;
  found: unknown;
  wanted: unknown;
}

export interface BrowserInput {
  /** The API's origin (not this page's). */
  api: string;
  username: string;
  password: string;
  organizationId: string;
}

/** The URL of `rel="next"` in a Link header (RFC 8288), if any. */
function nextLink(header: string | null): string | undefined {
  return header ? /<([^>]+)>\s*;\s*rel="next"/.exec(header)?.[1] : undefined;
}

export async function runScenario(input: BrowserInput): Promise<Check[]> {
  const checks: Check[] = [];
  const check = (message: string, found: unknown, wanted: unknown) => void checks.push({ message, found, wanted });
  const anonymous = createClient(createConfig({ baseUrl: input.api }));
  const as = (access: string): Client => createClient(createConfig({ baseUrl: input.api, auth: access }));

  const signedIn = await createToken({ client: anonymous, body: { username: input.username, password: input.password } });
  check('sign-in from another origin', signedIn.response?.status, 200);
  check('its rate-limit headers are readable', /^\d+$/.test(signedIn.response?.headers.get('x-ratelimit-limit') ?? ''), true);
  if (!signedIn.data) return checks;
  const refreshed = await refreshToken({ client: anonymous, body: { refresh: signedIn.data.refresh } });
  check('refresh', refreshed.response?.status, 200);
  check('the refresh token rotated', refreshed.data?.refresh !== signedIn.data.refresh, true);
  const reused = await refreshToken({ client: anonymous, body: { refresh: signedIn.data.refresh } });
  check('the rotated-away refresh token is refused, as a typed Problem', [reused.response?.status, reused.error?.status], [401, 401]);
  if (!refreshed.data) return checks;
  // Reuse of a rotated token ends the session it belonged to: sign in again for the rest of the scenario.
  const session = (await createToken({ client: anonymous, body: { username: input.username, password: input.password } })).data;
  if (!session) return checks;
  const user = as(session.access);
  const me = await getMe({ client: user });
  check('the access token works cross-origin (Authorization allowed by the preflight)', me.data?.username, input.username);

  const path = { organization_id: input.organizationId };
  const idempotent = async (key: string, name: string) => {
    const headers = { 'idempotency-key': key };
    const first = await createCompany({ client: user, path, body: { name }, headers });
    const again = await createCompany({ client: user, path, body: { name }, headers });
    check(`${name}: created`, first.response?.status, 201);
    check(`${name}: the replay answers the same company`, again.data?.id, first.data?.id);
    check(`${name}: Idempotent-Replayed is readable`, again.response?.headers.get('idempotent-replayed'), 'true');
    check(`${name}: the first answer is no replay`, first.response?.headers.get('idempotent-replayed'), null);
    if (!first.data) throw new Error(`${name}: ${JSON.stringify(first.error)}`);
    return first.data;
  };
  const companies = [
    await idempotent('browser-1', 'Initech'),
    await idempotent('browser-2', 'Globex'),
    await idempotent('browser-3', 'Umbrella'),
  ];
  const contactHeaders = { 'idempotency-key': 'browser-contact-1' };
  const contactBody = { company_id: companies[0]!.id, first_name: 'Ada', last_name: 'Lovelace' };
  const contact = await createContact({ client: user, path, body: contactBody, headers: contactHeaders });
  const contactAgain = await createContact({ client: user, path, body: contactBody, headers: contactHeaders });
  check('a contact created with an Idempotency-Key', contact.response?.status, 201);
  check(
    'its replay answers the same contact',
    [contactAgain.data?.id, contactAgain.response?.headers.get('idempotent-replayed')],
    [contact.data?.id, 'true'],
  );

  const listed: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await listCompanies({ client: user, path, query: { limit: 2, ...(cursor ? { cursor } : {}) } });
    listed.push(...(page.data ?? []).map((company) => company.id));
    pages += 1;
    // Readable only because the API exposes Link; the link is a path on the API's origin, not this page's.
    const next = nextLink(page.response?.headers.get('link') ?? null);
    cursor = next ? (new URL(next, input.api).searchParams.get('cursor') ?? undefined) : undefined;
  } while (cursor && pages < 5);
  check('pages followed through the Link header', pages, 2);
  check('every company once, newest first', listed, companies.map((company) => company.id).reverse());

  const found = await listCompanies({ client: user, path, query: { search: 'glob' } });
  check(
    'search',
    (found.data ?? []).map((company) => company.name),
    ['Globex'],
  );
  // The sort is a typed enum of the generated client (ListSort); pages of a sort follow their Link like any other.
  const byName: string[] = [];
  let nameCursor: string | undefined;
  do {
    const page = await listCompanies({
      client: user,
      path,
      query: { sort: '-name', limit: 2, ...(nameCursor ? { cursor: nameCursor } : {}) },
    });
    byName.push(...(page.data ?? []).map((company) => company.name));
    const next = nextLink(page.response?.headers.get('link') ?? null);
    nameCursor = next ? (new URL(next, input.api).searchParams.get('cursor') ?? undefined) : undefined;
  } while (nameCursor && byName.length < 10);
  check('sorted by name, descending, across pages', byName, ['Umbrella', 'Initech', 'Globex']);

  const read = await getCompany({ client: user, path: { ...path, company_id: companies[1]!.id } });
  const etag = read.response?.headers.get('etag') ?? '';
  check('the ETag is readable', /^"[0-9a-z]+"$/.test(etag), true);
  const saved = await updateCompany({
    client: user,
    path: { ...path, company_id: companies[1]!.id },
    body: { name: 'Globex Corporation' },
    headers: { 'if-match': etag },
  });
  check('an If-Match update at the current ETag saves', saved.response?.status, 200);
  const stale = await updateCompany({
    client: user,
    path: { ...path, company_id: companies[1]!.id },
    body: { name: 'Globex (other tab)' },
    headers: { 'if-match': etag },
  });
  check(
    'the other tab at the old ETag gets 412 as a typed Problem',
    [stale.response?.status, stale.error?.code],
    [412, 'precondition_failed'],
  );

  const missing = await getCompany({ client: user, path: { ...path, company_id: '00000000-0000-4000-8000-000000000000' } });
  const problem: Problem | undefined = missing.error;
  check(
    'an unknown company: 404 read as the typed Problem',
    [missing.response?.status, problem?.status, problem?.code],
    [404, 404, 'company_not_found'],
  );
  check('as problem+json', /^application\/problem\+json/.test(missing.response?.headers.get('content-type') ?? ''), true);

  const out = await logout({ client: user, body: { refresh: session.refresh } });
  check('sign out', out.response?.status, 204);
  const after = await getMe({ client: user });
  check(
    'after sign-out the access token is refused, and the 401 is readable',
    [after.response?.status, after.error?.code],
    [401, 'token_not_valid'],
  );
  return checks;
}

/** What a page of an origin the API does not allow sees: the browser refuses to hand it any answer. */
export async function tryFromElsewhere(api: string): Promise<string> {
  try {
    const res = await fetch(`${api}/api/v1/auth/token/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'nobody', password: 'nobody-password' }),
    });
    return `answered ${res.status}`;
  } catch (error) {
    return (error as Error).name;
  }
}

Object.assign(globalThis, { runScenario, tryFromElsewhere });
