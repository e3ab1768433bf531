// The niceness of each thread of this process, for tests of a thread's priority (Linux keeps one per thread).
import { readdir, readFile } from 'node:fs/promises';

/** One entry per live thread: field 19 of /proc/self/task/<tid>/stat (a thread that ended meanwhile is left out). */
export async function threadNiceness(): Promise<number[]> {
  const values = await Promise.all(
    (await readdir('/proc/self/task')).map(async (task) => {
      const stat = await readFile(`/proc/self/task/${task}/stat`, 'utf8').catch(() => undefined);
      // The fields after the command name, which is in parentheses: niceness is the 17th of them.
      return stat === undefined ? undefined : Number(stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[16]);
    }),
  );
  return values.filter((value): value is number => value !== undefined);
}
