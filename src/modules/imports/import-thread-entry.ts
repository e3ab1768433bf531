// The import thread's side: parses uploads to check them and runs import jobs, so that the CPU an import takes (the
// CSV parser, the row checks, building its statements) is never spent on the event loop that answers the API.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { openPool } from '../../db/client.js';
import { ProblemError } from '../../lib/problem.js';
import { runImport } from './import-batches.js';
import { parseImportFile } from './import-file.js';
import { IMPORT_THREAD_NICENESS, type ThreadReply, type ThreadRequest } from './import-thread.js';

if (!parentPort) throw new Error('import-thread-entry runs as a worker thread');
const port = parentPort;

// Linux keeps a niceness per thread, and /proc/thread-self names this one.
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').at(-1)), IMPORT_THREAD_NICENESS);
} catch {
  // Not Linux: the thread runs at the process's priority.
}
const reply = (message: ThreadReply) => port.postMessage(message);

/** The text pieces of each count under way, handed to its parser as they arrive (one asked for at a time). */
const feeds = new Map<number, (text: string | null) => void>();

async function* piecesOf(id: number): AsyncGenerator<string> {
  for (;;) {
    const text = await new Promise<string | null>((resolve) => {
      feeds.set(id, resolve);
      reply({ id, type: 'more' });
    });
    if (text === null) return;
    yield text;
  }
}

async function count(id: number, delimiter: string) {
  let header: string[] | null = null;
  let rows = 0;
  for await (const row of parseImportFile(piecesOf(id), delimiter)) {
    if (header) rows++;
    else header = row.cells;
  }
  return { header, rows };
}

async function run(request: Extract<ThreadRequest, { type: 'run' }>) {
  // One connection: a job's batches are one after the other.
  const pool = openPool(request.connection.url, 1, () => {}, { pooler: request.connection.pooler });
  try {
    return await runImport(pool, request.job);
  } finally {
    await pool.end().catch(() => {});
  }
}

port.on('message', (request: ThreadRequest) => {
  if (request.type === 'text' || request.type === 'end') {
    const feed = feeds.get(request.id);
    feeds.delete(request.id);
    feed?.(request.type === 'text' ? request.text : null);
    return;
  }
  const work = request.type === 'count' ? count(request.id, request.delimiter) : run(request);
  work.then(
    (value) => reply({ id: request.id, type: 'result', value }),
    (error: unknown) => {
      feeds.delete(request.id);
      reply({
        id: request.id,
        type: 'error',
        message: (error as Error)?.message ?? String(error),
        ...(error instanceof ProblemError ? { invalidFile: error.detail } : {}),
      });
    },
  );
});
