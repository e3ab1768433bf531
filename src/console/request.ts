// What console pages read from a request (form fields, query values, ids, the session) and how they answer it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditContext } from '../audit/audit-log.js';
import type { ConsoleSession } from './sessions.js';
import type { Viewer } from './views/layout.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

declare module 'fastify' {
  interface FastifyRequest {
    consoleSession: ConsoleSession | null;
    /** The session's operator as pages show them; set with the session. */
    consoleViewer: Viewer | null;
  }
  interface FastifyContextConfig {
    consolePublic?: boolean;
  }
}

/** A refusal shown as the console's error page with this status. */
export class ConsoleHttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (message = 'There is nothing at this address.') => new ConsoleHttpError(404, 'Not found', message);
const signedOut = () => new ConsoleHttpError(401, 'Signed out', 'Your console session has ended. Sign in again.');

/** A form field or query value as text ('' when absent or not a string). */
export const field = (body: unknown, name: string): string => {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
};
export const query = (request: FastifyRequest, name: string) => field(request.query, name);

/** `value` when it is one of `choices`, else '' (no filter). */
export const choice = (value: string, choices: readonly string[]) => (choices.includes(value) ? value : '');

export const pageNumber = (request: FastifyRequest) => {
  const page = Number(query(request, 'page') || '1');
  return Number.isInteger(page) && page >= 1 && page <= 100_000 ? page : 1;
};

/** The `:id` (or another named parameter) of the path; anything but a UUID is a 404. */
export function idParam(request: FastifyRequest, name = 'id'): string {
  const id = (request.params as Record<string, string | undefined>)[name] ?? '';
  if (!UUID.test(id)) throw notFound();
  return id;
}

/** The session of a console route past the session check (the preHandler redirects every request without one). */
export function sessionOf(request: FastifyRequest): ConsoleSession {
  if (!request.consoleSession) throw signedOut();
  return request.consoleSession;
}

/** The signed-in operator as the audit log records them. */
export const auditOf = (request: FastifyRequest): AuditContext => {
  const user = sessionOf(request).user;
  return { actor: { type: 'user', userId: user.id, username: user.username }, ip: request.ip };
};

/** The signed-in operator as a page shows them (with their forms' CSRF token). */
export function viewerOf(request: FastifyRequest): Viewer {
  if (!request.consoleViewer) throw signedOut();
  return request.consoleViewer;
}

/** The message an action redirected with (`?done=`). */
export const notice = (request: FastifyRequest) => query(request, 'done');

export const sendHtml = (reply: FastifyReply, body: string, status = 200) => reply.code(status).type('text/html; charset=utf-8').send(body);

/** After an action: back to `path` with its outcome as the page's status line (303: the browser GETs it). */
export const redirectDone = (reply: FastifyReply, path: string, done: string) =>
  reply.redirect(`${path}?done=${encodeURIComponent(done)}`, 303);
