// Reads of the incremental sync in tests: a change is handed out once no transaction older than it is open anywhere in
// the cluster (the sync's horizon), and concurrently running test files share the cluster.
import { setTimeout as sleep } from 'node:timers/promises';

/** `read()` again until `ready` holds on its answer, for at most `ms`; the last answer either way (asserted by the caller). */
export async function whenSynced<T>(read: () => Promise<T>, ready: (value: T) => boolean, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  let value = await read();
  while (!ready(value) && Date.now() < until) {
    await sleep(100);
    value = await read();
  }
  return value;
}
