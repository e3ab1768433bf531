// The benchmark's baseline: a bare Fastify + pg server (JWT verification and nothing else, no Prisma) that answers
// the benchmarked requests with the service's statements and response bodies, the limit the service is held to.
import cluster from 'node:cluster';
import { once } from 'node:events';
import fastifyJwt from '@fastify/jwt';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import pg from 'pg';
import { DEFAULT_DATABASE_POOL_SIZE } from '../src/config.js';
import { scopePages } from '../src/db/tenant-pages.js';
import { scopeWrites } from '../src/db/tenant-writes.js';
import { decodeListCursor, encodeListCursor } from '../src/lib/pagination.js';
import { linkNext } from '../src/http/pagination.js';
import { getMe } from '../src/modules/account/service.js';
import { MeSchema } from '../src/modules/account/schemas.js';
import { CompanySchema } from '../src/modules/companies/schemas.js';
import { companyPage } from '../src/modules/companies/record.js';
import { companyService } from '../src/modules/companies/service.js';
import { ContactSchema } from '../src/modules/contacts/schemas.js';
import { contactService } from '../src/modules/contacts/service.js';
import { COMPONENT_SCHEMAS } from '../src/http/components.js';
import { Ref } from '../src/lib/http-schemas.js';
import { authenticateClaims, authenticateMember } from '../src/db/authentication.js';
import type { CurrentUser } from '../src/lib/current-user.js';

const { DATABASE_URL, JWT_SECRET, PORT } = process.env;
if (!DATABASE_URL || !JWT_SECRET || !PORT) throw new Error('DATABASE_URL, JWT_SECRET and PORT are required');

// WEB_CONCURRENCY > 1: that many processes on the port, as the service runs them (node:cluster), so the bench can show
// what a second process gains when the server itself costs as little as it can on this machine.
const processes = Number(process.env.WEB_CONCURRENCY ?? 1);
if (cluster.isPrimary && processes > 1) {
  const workers = Array.from({ length: processes }, () => cluster.fork());
  process.on('SIGTERM', () => {
    for (const worker of workers) worker.process.kill('SIGTERM');
    void Promise.all(workers.map((worker) => (worker.isDead() ? undefined : once(worker, 'exit')))).then(() => process.exit(0));
  });
} else {
  await serveBaseline(DATABASE_URL, JWT_SECRET, Number(PORT));
}

interface Claims {
  sub: string;
  sid: string;
  ver: number;
}

type OrgRequest = FastifyRequest<{ Params: { organization_id: string }; Querystring: { limit?: string; cursor?: string } }>;

async function serveBaseline(databaseUrl: string, jwtSecret: string, port: number): Promise<void> {
  // The service's pool size (DATABASE_POOL_SIZE, empty or unset: its default): both sides hold as many connections.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: Number(process.env.DATABASE_POOL_SIZE || DEFAULT_DATABASE_POOL_SIZE) });
  const app = Fastify({ logger: false });
  await app.register(fastifyJwt, { secret: jwtSecret, verify: { algorithms: ['HS256'] } });
  // The shared schemas the response bodies refer to (the service's named components, as its app registers them).
  for (const schema of COMPONENT_SCHEMAS) app.addSchema(schema);

  /** The service's authentication round trip (the same typed queries): the user and their live session, plus the membership when asked. */
  async function authenticate(request: FastifyRequest, organizationId?: string): Promise<CurrentUser> {
    const claims = await request.jwtVerify<Claims>();
    if (!organizationId) return authenticateClaims(pool, claims);
    const { user, membership } = await authenticateMember(pool, claims, organizationId);
    if (!membership) throw Object.assign(new Error('not found'), { statusCode: 404 });
    return user;
  }

  const order = { sort: 'created_at', descending: true };
  const page = (request: OrgRequest) => ({
    after: decodeListCursor(request.query.cursor, order, ['timestamp']),
    limit: Number(request.query.limit ?? 50),
  });

  for (const [path, service, item] of [
    ['companies', companyService, CompanySchema],
    ['contacts', contactService, ContactSchema],
  ] as const) {
    app.get(
      `/api/v1/organizations/:organization_id/${path}/`,
      // By reference, as the service's routes do: an item schema inlined with its $id made fast-json-stringify resolve
      // its own references (`LifecycleStage`) against it, and every company list answered 500.
      { schema: { response: { 200: Type.Array(Ref(item)) } } },
      async (request: OrgRequest, reply: FastifyReply) => {
        const organizationId = request.params.organization_id;
        await authenticate(request, organizationId);
        const { limit, after } = page(request);
        const rows = (await service.list(scopePages(pool, organizationId), {}, { order, after, limit })) as Array<{
          id: string;
          created_at: string;
        }>;
        const last = rows[limit - 1];
        if (rows.length > limit && last)
          linkNext(request, reply, encodeListCursor(order, { values: [last.created_at], id: last.id }), limit);
        return rows.slice(0, limit);
      },
    );
  }

  app.get('/api/v1/auth/me/', { schema: { response: { 200: MeSchema } } }, async (request) => {
    const user = await authenticate(request);
    return getMe(pool, user, null);
  });

  // The service's statement: the company and its automation runs.
  app.post(
    '/api/v1/organizations/:organization_id/companies/',
    { schema: { response: { 201: Ref(CompanySchema) } } },
    async (request: OrgRequest, reply) => {
      const organizationId = request.params.organization_id;
      await authenticate(request, organizationId);
      reply.code(201);
      return scopeWrites(pool, organizationId).insert(companyPage, request.body as Record<string, unknown>, 'company.created');
    },
  );

  await app.listen({ port, host: '127.0.0.1' });
  process.on('SIGTERM', () => {
    void app
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0));
  });
}
