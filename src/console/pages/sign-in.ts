// Signing in and out of the console; the sign-in pages are the console's only public routes.
import type { FastifyInstance } from 'fastify';
import { auditOf, field, query, sendHtml, sessionOf } from '../request.js';
import { SESSION_COOKIE } from '../sessions.js';
import { loginPage } from '../views/sign-in.js';

const SIGN_IN_FAILED = 'Please enter a correct username and password for a staff account.';

/** A `next` target only when it is a path inside the console (no scheme, no host, no `//` or backslash tricks). */
export function safeNext(value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('/admin/') || value.startsWith('//') || /[\\\s]/.test(value)) return '/admin/';
  return value;
}

/** The session cookie's options: only the console's paths, never sent cross-site, HTTPS-only in production. */
export const sessionCookieOptions = (app: FastifyInstance) => ({
  httpOnly: true,
  sameSite: 'strict' as const,
  path: '/admin',
  secure: app.config.nodeEnv === 'production',
});

export default async function signInPages(app: FastifyInstance) {
  const { signIn } = app.services.console;
  const cookieOptions = sessionCookieOptions(app);
  const { maxSeconds } = app.config.adminSession;

  app.get('/login/', { config: { consolePublic: true } }, async (request, reply) => {
    if (request.consoleSession) return reply.redirect(safeNext(query(request, 'next')), 303);
    return sendHtml(reply, loginPage(null, safeNext(query(request, 'next')), ''));
  });

  app.post(
    '/login/',
    { config: { consolePublic: true }, preHandler: [app.rateLimitPreset('tokenPerIp'), app.rateLimitPreset('token')] },
    async (request, reply) => {
      const username = field(request.body, 'username').slice(0, 150);
      const password = field(request.body, 'password').slice(0, 4096);
      const next = safeNext(field(request.body, 'next'));
      // The old session, if any, ends: the new id replaces it (no fixation).
      const id = username && password ? await signIn.signIn({ username, password }, request.ip, request.consoleSession?.idHash) : null;
      if (!id) return sendHtml(reply, loginPage(SIGN_IN_FAILED, next, username), 200);
      reply.setCookie(SESSION_COOKIE, id, { ...cookieOptions, maxAge: maxSeconds });
      return reply.redirect(next, 303);
    },
  );

  app.post('/logout/', async (request, reply) => {
    await signIn.signOut(sessionOf(request).idHash, auditOf(request));
    reply.clearCookie(SESSION_COOKIE, cookieOptions);
    return reply.redirect('/admin/login/', 303);
  });
}
