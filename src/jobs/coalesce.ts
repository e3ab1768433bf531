// Gathers the calls a job runner's workers make within one turn of the event loop into one call of a batch function:
// one SQL statement for the rows of many jobs instead of one round trip each.

/**
 * `one(item)` resolves with `many([...items])`'s answer for that item: the items given until the event loop next
 * checks for I/O (setImmediate: jobs handed out together start together) go into one call, at most `max` each. A
 * failing batch rejects each of its callers (each job then fails as it would have alone).
 */
export function coalesce<I, O>(many: (items: I[]) => Promise<O[]>, max = 100): (item: I) => Promise<O> {
  const pending: Array<{ item: I; resolve: (value: O) => void; reject: (error: unknown) => void }> = [];
  const flush = () => {
    const batch = pending.splice(0, max);
    if (pending.length > 0) setImmediate(flush);
    many(batch.map(({ item }) => item)).then(
      (results) => {
        for (const [i, { resolve }] of batch.entries()) resolve(results[i] as O);
      },
      (error: unknown) => {
        for (const { reject } of batch) reject(error);
      },
    );
  };
  return (item) =>
    new Promise<O>((resolve, reject) => {
      if (pending.length === 0) setImmediate(flush);
      pending.push({ item, resolve, reject });
    });
}
