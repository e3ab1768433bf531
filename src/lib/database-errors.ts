// Tells a lost or refused database connection apart from a query's own failure, through pg's, Prisma's and the adapter's error shapes.

/** SQLSTATEs that mean "the server is not there for you right now", not "your statement is wrong". */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '53400']);
/** Prisma's own codes for an unreachable or vanished server. */
const UNAVAILABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017']);
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** Adapter error kinds of the same meaning. */
const UNAVAILABLE_KINDS = new Set([
  'DatabaseNotReachable',
  'DatabaseDoesNotExist',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
]);
/** pg's own client-side messages, which carry no code. */
const UNAVAILABLE_MESSAGE = new RegExp(
  [
    'Connection terminated',
    'connection timeout',
    'timeout exceeded when trying to connect',
    'Client has encountered a connection error',
    'Cannot use a pool after calling end',
  ].join('|'),
  'i',
);

function codesOf(error: Record<string, unknown>): unknown[] {
  const meta = error.meta as { driverAdapterError?: { cause?: Record<string, unknown> } } | undefined;
  const adapterCause = meta?.driverAdapterError?.cause;
  return [error.code, error.originalCode, error.kind, adapterCause?.code, adapterCause?.originalCode, adapterCause?.kind];
}

/** True when the error (or anything in its cause chain) says the database could not be reached or dropped the connection. */
export function isDatabaseUnavailable(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let current = error; current !== null && typeof current === 'object' && !seen.has(current); ) {
    seen.add(current);
    const record = current as Record<string, unknown>;
    for (const code of codesOf(record)) {
      if (typeof code !== 'string') continue;
      if (UNAVAILABLE_SQLSTATES.has(code) || (code.startsWith('08') && code.length === 5)) return true;
      if (UNAVAILABLE_PRISMA_CODES.has(code) || UNAVAILABLE_SOCKET_CODES.has(code) || UNAVAILABLE_KINDS.has(code)) return true;
    }
    if (typeof record.message === 'string' && UNAVAILABLE_MESSAGE.test(record.message)) return true;
    current = record.cause;
  }
  return false;
}
