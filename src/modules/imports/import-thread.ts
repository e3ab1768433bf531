// The API's side of the import thread: one worker thread per process, started on first use and ended after a minute
// without work, that checks uploaded files and runs import jobs; the event loop answering requests passes it text and
// waits.
import { Worker } from 'node:worker_threads';
import type { ImportJob } from './import-batches.js';
import { invalidFile } from './import-file.js';

/**
 * The thread's niceness: under contention it yields the CPU to the API's threads (an import is background work; a
 * request has someone waiting). Measured in `make bench-csv`: docs/benchmarks.md, Imports and exports.
 */
export const IMPORT_THREAD_NICENESS = 5;

/** Where the thread connects: the app's database URL, and whether it is a transaction-mode pooler. */
export interface ThreadConnection {
  url: string;
  pooler: boolean;
}

/** The app's connection as the thread makes it (a direct URL beside DATABASE_URL means DATABASE_URL is a pooler). */
export function threadConnection(config: { databaseUrl?: string | undefined; databaseDirectUrl?: string | undefined }): ThreadConnection {
  if (!config.databaseUrl) throw new Error('databaseUrl is not set');
  return { url: config.databaseUrl, pooler: config.databaseDirectUrl !== undefined };
}

export type ThreadRequest =
  | { id: number; type: 'count'; delimiter: string }
  | { id: number; type: 'text'; text: string }
  | { id: number; type: 'end' }
  | { id: number; type: 'run'; connection: ThreadConnection; job: ImportJob };

export type ThreadReply =
  | { id: number; type: 'more' }
  | { id: number; type: 'result'; value: unknown }
  | { id: number; type: 'error'; message: string; invalidFile?: string };

interface Pending {
  settle: (reply: ThreadReply) => void;
  fail: (error: Error) => void;
}

/**
 * How long the thread is kept without a task: a burst of uploads and their jobs share one, and its memory (about
 * 50 MB: its own heap and the modules it loads) is given back once the imports are done.
 */
export const IMPORT_THREAD_IDLE_MS = 60_000;

/**
 * The thread and its tasks under way. It holds the process open only while a task is under way, ends after
 * `idleMs` without one, and a thread that died fails its tasks; the next use starts a new one.
 */
export class ImportThread {
  #worker: Worker | undefined;
  #pending = new Map<number, Pending>();
  #next = 1;
  #idle: NodeJS.Timeout | undefined;

  constructor(private readonly idleMs = IMPORT_THREAD_IDLE_MS) {}

  #start(): Worker {
    if (this.#worker) return this.#worker;
    // Built code runs `.js`; under tsx (tests, `npm run dev`) this module is `.ts`, and so is its entry.
    const entry = new URL(`./import-thread-entry${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
    const worker = new Worker(entry);
    const gone = (error: Error) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      const pending = [...this.#pending.values()];
      this.#pending.clear();
      for (const task of pending) task.fail(error);
    };
    worker.on('message', (reply: ThreadReply) => this.#pending.get(reply.id)?.settle(reply));
    worker.on('error', gone);
    worker.on('exit', (code) => gone(new Error(`the import thread exited (${code})`)));
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  /** Ends the thread if it is still the current one and has no task. */
  #stop(worker: Worker): void {
    if (this.#worker !== worker || this.#pending.size > 0) return;
    this.#worker = undefined;
    void worker.terminate();
  }

  /**
   * Sends the request `make` builds and settles with the thread's answer: the result's value, or a failure (the
   * thread's error; a file the parser refused is the same 400 as anywhere). The thread's asks for more text go to
   * `onMore`.
   */
  task<T>(make: (id: number) => ThreadRequest, onMore?: (worker: Worker, id: number) => void): Promise<T> {
    clearTimeout(this.#idle);
    const worker = this.#start();
    const id = this.#next++;
    if (this.#pending.size === 0) worker.ref();
    return new Promise<T>((resolve, reject) => {
      const done = () => {
        this.#pending.delete(id);
        if (this.#pending.size > 0) return;
        worker.unref();
        this.#idle = setTimeout(() => this.#stop(worker), this.idleMs).unref();
      };
      this.#pending.set(id, {
        settle: (reply) => {
          if (reply.type === 'more') return onMore?.(worker, id);
          done();
          if (reply.type === 'result') resolve(reply.value as T);
          else reject(reply.invalidFile !== undefined ? invalidFile(reply.invalidFile) : new Error(reply.message));
        },
        fail: (error) => {
          done();
          reject(error);
        },
      });
      worker.postMessage(make(id));
    });
  }
}

const importThread = new ImportThread();

/**
 * The header and the number of rows after it of the text, parsed on the import thread one piece at a time (the
 * thread asks for the next when it wants it, so the text is never held whole).
 */
export async function countRows(
  texts: AsyncIterable<string>,
  delimiter: string,
  thread = importThread,
): Promise<{ header: string[] | null; rows: number }> {
  const source = texts[Symbol.asyncIterator]();
  let failure: unknown;
  const counted = thread.task<{ header: string[] | null; rows: number }>(
    (id) => ({ id, type: 'count', delimiter }),
    (worker, id) => {
      source.next().then(
        (next) => worker.postMessage(next.done ? { id, type: 'end' } : { id, type: 'text', text: next.value }),
        (error: unknown) => {
          // The source failed (not UTF-8): the thread is told the text ended, and the source's error is the answer.
          failure = error;
          worker.postMessage({ id, type: 'end' });
        },
      );
    },
  );
  try {
    const result = await counted;
    if (failure !== undefined) throw failure;
    return result;
  } catch (error) {
    throw failure ?? error;
  } finally {
    await source.return?.();
  }
}

/** Runs the import's batches on the thread: true when every row was taken, false when it was cancelled meanwhile. */
export const runImportInThread = (connection: ThreadConnection, job: ImportJob): Promise<boolean> =>
  importThread.task<boolean>((id) => ({ id, type: 'run', connection, job }));
