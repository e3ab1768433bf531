// A client's session written against the SDK that @hey-api/openapi-ts generates from openapi/openapi.json into ./sdk/.
// Not compiled with the project (./sdk/ exists only in the generated-client test's temp dir, where this file is copied).
import { createClient, createConfig, type Client } from './sdk/client/index.js';
import {
  acceptInvitation,
  completeSetup,
  createCompany,
  createContact,
  createInvitation,
  createToken,
  getCompany,
  getMe,
  getSetupAvailability,
  listCompanies,
  refreshToken,
  type Problem,
} from './sdk/index.js';

/** The assertions the scenario makes (a subset of tap's). */
export interface Checks {
  equal(found: unknown, wanted: unknown, message?: string): unknown;
  same(found: unknown, wanted: unknown, message?: string): unknown;
  ok(value: unknown, message?: string): unknown;
  match(found: unknown, pattern: RegExp, message?: string): unknown;
}

export interface ScenarioInput {
  origin: string;
  setupToken: string;
  smtp: { host: string; port: number; username: string; password: string };
  /** Resolves with the token of the invitation link emailed to the address. */
  invitationToken(email: string): Promise<string>;
}

/** The URL of `rel="next"` in a Link header (RFC 8288), if any. */
function nextLink(header: string | null): string | undefined {
  return header ? /<([^>]+)>\s*;\s*rel="next"/.exec(header)?.[1] : undefined;
}

export async function runScenario(t: Checks, input: ScenarioInput): Promise<void> {
  const anonymous = createClient(createConfig({ baseUrl: input.origin }));
  const signIn = async (username: string, password: string) => {
    const tokens = await createToken({ client: anonymous, body: { username, password } });
    t.equal(tokens.response?.status, 200, `${username} signs in`);
    t.match(tokens.response?.headers.get('x-ratelimit-limit') ?? '', /^\d+$/, 'the declared X-RateLimit-Limit header is sent');
    if (!tokens.data) throw new Error(`sign-in of ${username} failed: ${JSON.stringify(tokens.error)}`);
    return tokens.data;
  };
  const as = (access: string): Client => createClient(createConfig({ baseUrl: input.origin, auth: access }));

  const availability = await getSetupAvailability({ client: anonymous });
  t.same(availability.data, { available: true }, 'setup is open');
  const setup = await completeSetup({
    client: anonymous,
    body: {
      setup_token: input.setupToken,
      username: 'admin',
      email: 'admin@example.test',
      password: 'correct-horse-battery',
      organization_name: 'Acme',
      organization_slug: 'acme',
      smtp: { name: 'Test SMTP', ...input.smtp, from_email: 'crm@example.test', use_tls: false, use_ssl: false },
    },
  });
  t.equal(setup.response?.status, 201, 'setup completed');
  t.equal(typeof setup.data?.detail, 'string', 'setup answers a Detail body');

  const first = await signIn('admin', 'correct-horse-battery');
  const refreshed = await refreshToken({ client: anonymous, body: { refresh: first.refresh } });
  t.equal(refreshed.response?.status, 200, 'refresh');
  if (!refreshed.data) throw new Error(`refresh failed: ${JSON.stringify(refreshed.error)}`);
  t.ok(refreshed.data.refresh !== first.refresh, 'the refresh token rotated');
  // The bearer scheme the document declares is what the SDK sends: the refreshed access token works.
  const admin = as(refreshed.data.access);
  const me = await getMe({ client: admin });
  const organizationId = me.data?.organizations[0]?.id;
  if (!organizationId) throw new Error(`no workspace: ${JSON.stringify(me.error)}`);
  t.equal(me.data?.username, 'admin', 'the admin reads their profile with the refreshed token');

  const unauthenticated = await getMe({ client: anonymous });
  t.equal(unauthenticated.response?.status, 401, 'without a token: 401');
  t.equal(unauthenticated.error?.status, 401, 'read as the typed Problem');

  const invited = await createInvitation({
    client: admin,
    path: { organization_id: organizationId },
    body: { email: 'member@example.test', role: 'member' },
  });
  t.equal(invited.response?.status, 201, 'the admin invites a member');
  const token = await input.invitationToken('member@example.test');
  const accepted = await acceptInvitation({
    client: anonymous,
    path: { token },
    body: { username: 'member', password: 'member-password-long', display_name: 'Member' },
  });
  t.equal(accepted.response?.status, 201, `the invitation is accepted: ${JSON.stringify(accepted.error ?? '')}`);

  const member = as((await signIn('member', 'member-password-long')).access);
  const path = { organization_id: organizationId };
  const created: string[] = [];
  for (const name of ['Initech', 'Globex', 'Umbrella']) {
    const company = await createCompany({ client: member, path, body: { name, lifecycle_stage: 'prospect' } });
    t.equal(company.response?.status, 201, `the member creates ${name}`);
    if (!company.data) throw new Error(`company ${name}: ${JSON.stringify(company.error)}`);
    t.equal(company.data.lifecycle_stage, 'prospect');
    created.push(company.data.id);
  }
  const contact = await createContact({
    client: member,
    path,
    body: { company_id: created[0]!, first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.test' },
  });
  t.equal(contact.response?.status, 201, 'the member creates a contact');
  t.equal(contact.data?.company_id, created[0], 'of the first company');

  // Pages of two, following Link: rel="next" until it is absent.
  const listed: string[] = [];
  let pages = 0;
  let cursor: string | undefined;
  do {
    const page = await listCompanies({ client: member, path, query: { limit: 2, ...(cursor ? { cursor } : {}) } });
    t.equal(page.response?.status, 200, `page ${pages + 1}`);
    listed.push(...(page.data ?? []).map((company) => company.id));
    pages += 1;
    const next = nextLink(page.response?.headers.get('link') ?? null);
    cursor = next ? (new URL(next, input.origin).searchParams.get('cursor') ?? undefined) : undefined;
  } while (cursor && pages < 5);
  t.equal(pages, 2, 'three companies in pages of two: two pages');
  t.same(listed, [...created].reverse(), 'every company once, newest first');

  const missing = await getCompany({ client: member, path: { ...path, company_id: '00000000-0000-4000-8000-000000000000' } });
  t.equal(missing.response?.status, 404, 'an unknown company is 404');
  t.match(missing.response?.headers.get('content-type') ?? '', /^application\/problem\+json/, 'as problem+json');
  const problem: Problem | undefined = missing.error;
  t.equal(problem?.status, 404, 'the typed Problem carries the status');
  t.equal(typeof problem?.code, 'string', 'and a code');

  const invalid = await createCompany({ client: member, path, body: { name: '' } });
  t.equal(invalid.response?.status, 400, 'an empty name is 400');
  t.ok(invalid.error?.errors?.name?.length, 'the typed Problem names the field');
}
