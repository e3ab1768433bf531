// The import job's parser gets a stored piece of the file (1 MiB) in slices with a turn of the event loop between
// them, so the process's requests are answered while a piece is parsed (one piece in one go held the event loop for
// about 100 ms); a slice never splits a character, so every row reads back intact. The import thread counts a file's
// rows, fails a malformed one as a 400, and ends once idle.
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { PARSE_SLICE, parseImportFile, sliced } from '../../src/modules/imports/import-file.js';
import { countRows, IMPORT_THREAD_NICENESS, ImportThread } from '../../src/modules/imports/import-thread.js';
import { ProblemError } from '../../src/lib/problem.js';
import { threadNiceness } from '../helpers/threads.js';

const collect = async <T>(items: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
};
async function* pieces(...texts: string[]) {
  yield* texts;
}

t.test('slices of at most PARSE_SLICE characters, never between the halves of a surrogate pair', async (t) => {
  const emoji = '😀';
  // The pair's first half is the last character a slice of PARSE_SLICE could take.
  const text = `${'a'.repeat(PARSE_SLICE - 1)}${emoji}${'b'.repeat(PARSE_SLICE)}`;
  const slices = await collect(sliced(pieces(text, 'tail')));
  t.equal(slices.join(''), `${text}tail`, 'the slices are the text');
  t.ok(slices.length >= 3, `${slices.length} slices`);
  for (const slice of slices) {
    t.ok(slice.length <= PARSE_SLICE + 1, 'no slice is longer than PARSE_SLICE and the rest of a pair');
    const last = slice.charCodeAt(slice.length - 1);
    t.notOk(last >= 0xd800 && last <= 0xdbff, 'no slice ends with the first half of a pair');
  }
});

t.test('a 1 MiB piece is parsed in slices, between which the event loop turns', async (t) => {
  const rows = 12_000;
  const text = ['name,email', ...Array.from({ length: rows }, (_, i) => `Ünïcødé 😀 company ${i},sales${i}@example.com`)].join('\n');
  t.ok(text.length > 512 * 1024, `${text.length} characters in one piece`);
  let turns = 0;
  let ticking = true;
  const tick = () => {
    turns += 1;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const parsed = await collect(parseImportFile(pieces(text), ','));
  ticking = false;
  t.equal(parsed.length, rows + 1, 'every row and the header');
  t.same(parsed[5_001], { line: 5_002, cells: ['Ünïcødé 😀 company 5000', 'sales5000@example.com'] }, 'rows read back intact');
  const slices = Math.ceil(text.length / PARSE_SLICE);
  t.ok(turns >= slices, `the event loop turned ${turns} times while ${slices} slices were parsed`);
});

t.test('the import thread counts the rows, refuses a malformed file as a 400, and ends after its idle time', async (t) => {
  // The import thread is this process's one thread at the import niceness (Linux: field 19 of a thread's stat).
  const importThreads = async () => (await threadNiceness()).filter((n) => n === IMPORT_THREAD_NICENESS).length;
  const thread = new ImportThread(200);
  t.equal(await importThreads(), 0, 'no thread before the first use');
  t.same(await countRows(pieces('name,website\n', 'A,"https://a.example"\nB,', 'https://b.example\n'), ',', thread), {
    header: ['name', 'website'],
    rows: 2,
  });
  t.equal(await importThreads(), 1, 'started by its first task');
  const refused = await countRows(pieces('name\n"unclosed\n'), ',', thread).catch((error: unknown) => error);
  t.ok(refused instanceof ProblemError && refused.status === 400 && /not valid CSV/.test(refused.detail), 'a 400 problem');
  t.equal(await importThreads(), 1, 'the same thread takes the next task');
  for (let waited = 0; waited < 5000 && (await importThreads()) > 0; waited += 50) await sleep(50);
  t.equal(await importThreads(), 0, 'ended once idle for its idle time');
  t.same(await countRows(pieces('name\nC\n'), ',', thread), { header: ['name'], rows: 1 }, 'and started again when needed');
});
