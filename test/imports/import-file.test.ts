// The import job's parser gets a stored piece of the file (1 MiB) in slices with a turn of the event loop between
// them, so the process's requests are answered while a piece is parsed (one piece in one go held the event loop for
// about 100 ms); a slice never splits a character, so every row reads back intact.
import t from 'tap';
import { PARSE_SLICE, parseImportFile, sliced } from '../../src/modules/imports/import-file.js';

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
