// Renders every error, Fastify's own included, as RFC 9457 problem+json; 5xx details go to the log only.
import fp from 'fastify-plugin';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ProblemError, type FieldErrors } from '../lib/problem.js';
import type { ErrorCode } from '../lib/error-codes.js';
import { isDatabaseUnavailable } from '../lib/database-errors.js';
import { fieldErrors, type AjvIssue } from '../lib/field-errors.js';

const PROBLEM_TYPE_BASE = 'https://docs.example/errors/';

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  /** The request id (also in the server's log lines): what to quote when reporting a problem. */
  instance?: string;
  errors?: FieldErrors;
}

function problem(status: number, code: ErrorCode, title: string, detail: string, errors?: FieldErrors): ProblemBody {
  return { type: PROBLEM_TYPE_BASE + code.replace(/_/g, '-'), title, status, detail, code, ...(errors ? { errors } : {}) };
}

/** The problem's `instance`: the request id, as the log lines carry it. */
const requestInstance = (request: FastifyRequest) => `urn:request:${request.id}`;

/** Maps any thrown error to a problem body; unknown errors become an opaque 500. */
function toProblem(error: unknown, request: FastifyRequest): { body: ProblemBody; headers?: Record<string, string> } {
  if (error instanceof ProblemError) {
    const body = problem(error.status, error.code, error.title, error.detail, error.errors);
    return { body: { ...error.extensions, ...body }, headers: error.headers };
  }
  const fe = error as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
  if (fe.validation) {
    const detail =
      fe.validationContext === 'querystring'
        ? 'Query parameters are invalid.'
        : fe.validationContext === 'params'
          ? 'Path parameters are invalid.'
          : fe.validationContext === 'headers'
            ? 'Request headers are invalid.'
            : 'Request body is invalid.';
    return {
      body: problem(400, 'validation_failed', 'Validation failed', detail, fieldErrors(fe.validation, fe.validationContext)),
    };
  }
  switch (fe.code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return { body: problem(413, 'import_file_too_large', 'Payload too large', 'The file exceeds the import limit of 50 MiB.') };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { body: problem(413, 'payload_too_large', 'Payload too large', 'The request body exceeds 1 MiB.') };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { body: problem(415, 'unsupported_media_type', 'Unsupported media type', 'Send the request body as application/json.') };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { body: problem(400, 'malformed_json', 'Malformed JSON', 'The request body is not valid JSON.') };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { body: problem(400, 'bad_request', 'Bad request', 'Content-Length does not match the body.') };
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return { body: problem(400, 'bad_request', 'Bad request', 'The request URL is malformed.') };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { body: problem(414, 'uri_too_long', 'URI too long', 'A path parameter of the request URL is too long.') };
  }
  // Busboy's errors for a malformed multipart body (no boundary, a truncated part): the client's mistake.
  if (
    /^(Unexpected end of (form|file|multipart data)|Malformed part header|Multipart: Boundary not found|Part terminated early)/.test(
      String(fe.message),
    )
  ) {
    return { body: problem(400, 'bad_request', 'Bad request', 'The multipart body is malformed.') };
  }
  if (fe.statusCode === 429) {
    return { body: problem(429, 'rate_limited', 'Too many requests', 'Request was throttled. Try again later.') };
  }
  if (error instanceof SyntaxError && fe.statusCode === 400) {
    return { body: problem(400, 'malformed_json', 'Malformed JSON', 'The request body is not valid JSON.') };
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { body: problem(fe.statusCode, 'bad_request', 'Bad request', 'The request could not be processed.') };
  }
  if (isDatabaseUnavailable(error)) {
    // An outage, not a bug: the client may retry, and the pool reconnects once PostgreSQL is back.
    request.log.warn({ err: error }, 'database unavailable');
    return {
      body: problem(503, 'database_unavailable', 'Service unavailable', 'The database is not reachable; try again shortly.'),
      headers: { 'retry-after': '5' },
    };
  }
  request.log.error({ err: error }, 'unhandled error');
  return { body: problem(500, 'internal_error', 'Internal server error', 'An unexpected error occurred.') };
}

export function sendProblem(reply: FastifyReply, body: ProblemBody, headers?: Record<string, string>) {
  if (headers) reply.headers(headers);
  return reply.code(body.status).type('application/problem+json').send(body);
}

/**
 * Renders any error as problem+json. The app's error handler, and Fastify's `frameworkErrors` option (the router's
 * own refusals: a malformed URL, an over-long path parameter, which never reach the error handler), both use it.
 */
/** The problem body a ProblemError answers, as the error handler writes it: a batch operation's `error`. */
export function problemBodyOf(error: ProblemError, request: FastifyRequest): ProblemBody {
  const { body } = toProblem(error, request);
  return { ...body, instance: requestInstance(request) };
}

export function renderError(error: unknown, request: FastifyRequest, reply: FastifyReply) {
  const { body, headers } = toProblem(error, request);
  body.instance = requestInstance(request);
  if (body.status >= 400 && body.status < 500) request.log.info({ code: body.code, status: body.status }, 'request rejected');
  return sendProblem(reply, body, headers);
}

/**
 * Node's HTTP parser refuses a request it cannot read (a raw non-ASCII byte in the URL, a malformed request line or
 * header, headers over the size limit, a request too slow to arrive) before any route or hook sees it: Fastify's
 * `clientErrorHandler`. Its default answers `application/json` of its own shape; this writes the same problem+json
 * as every other refusal, then closes the connection (the parser cannot resynchronise on it). The client's bytes are
 * never echoed back or logged: they may hold a token.
 */
export function renderClientError(
  this: { log: { debug: (value: object, message: string) => void } },
  error: NodeJS.ErrnoException,
  socket: Duplex,
) {
  // A reset connection is gone: there is nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const body =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? problem(408, 'request_timeout', 'Request timeout', 'The request did not arrive in time.')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? problem(431, 'headers_too_large', 'Request header fields too large', 'The request headers exceed 16 KiB.')
        : problem(
            400,
            'bad_request',
            'Bad request',
            'The request is not valid HTTP/1.1 (for instance a byte outside ASCII in the URL: percent-encode it as UTF-8).',
          );
  this.log.debug({ code: error.code, status: body.status }, 'client error');
  if (socket.writable) {
    const text = JSON.stringify(body);
    socket.write(
      `HTTP/1.1 ${body.status} ${STATUS_CODES[body.status]}\r\nContent-Type: application/problem+json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy();
}

export default fp(
  async (app) => {
    app.setErrorHandler(renderError);
    app.setNotFoundHandler((request, reply) =>
      sendProblem(reply, {
        ...problem(404, 'not_found', 'Not found', `No route ${request.method} ${request.url.split('?')[0]}.`),
        instance: requestInstance(request),
      }),
    );
  },
  { name: 'errors' },
);
