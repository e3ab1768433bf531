// Runs Debian's wrk (one thread) against a URL and returns its figures, read from a Lua `done` hook's JSON line.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const WRK_SCRIPT = (method: string, body: string | undefined, delayMs: number | undefined) =>
  [
    `wrk.method = ${JSON.stringify(method)}`,
    // wrk paces a connection by waiting this long before each of its requests (wrk's Lua `delay` hook).
    ...(delayMs === undefined ? [] : [`delay = function() return ${delayMs} end`]),
    ...(body === undefined ? [] : [`wrk.body = ${JSON.stringify(body)}`, 'wrk.headers["Content-Type"] = "application/json"']),
    // A body's `{n}` becomes a value unique to each request (the run and a counter): creates whose fields must not
    // repeat (a company's email, refused twice in a workspace).
    ...(body?.includes('{n}')
      ? [
          'local sent, run = 0, tostring(os.time()) .. tostring(math.random(1000000))',
          'request = function()',
          '  sent = sent + 1',
          '  return wrk.format(nil, nil, nil, (string.gsub(wrk.body, "{n}", run .. "-" .. sent)))',
          'end',
        ]
      : []),
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    // The latencies as counts per 100 µs (wrk's latency(i) is the i-th distinct latency in µs and its count, of
    // #latency), so that windows can be merged into one distribution.
    '  local bins = {}',
    '  for i = 1, #latency do',
    '    local us, n = latency(i)',
    '    local b = math.floor(us / 100); bins[b] = (bins[b] or 0) + n',
    '  end',
    '  local parts = {}',
    '  for b, n in pairs(bins) do parts[#parts + 1] = b .. ":" .. n end',
    '  io.write("WRK_BINS " .. table.concat(parts, ",") .. "\\n")',
    '  io.write(string.format(\'WRK_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"errors":%d,"non2xx":%d}\\n\',',
    '    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),',
    '    e.connect + e.read + e.write + e.timeout, e.status))',
    'end',
  ].join('\n');

export interface WrkResult {
  requests: number;
  duration_us: number;
  p50_us: number;
  p99_us: number;
  errors: number;
  non2xx: number;
  /** wrk's own CPU time (user + system), in seconds. */
  cpuSeconds: number;
  /** Requests per 100 µs of latency (bin → count): windows merge into one distribution (see `percentileOf`). */
  bins: Map<number, number>;
}

/** The `p`th percentile (0–100), in ms, of the requests of several runs together, to 0.1 ms. */
export function percentileOf(runs: WrkResult[], p: number): number {
  const merged = new Map<number, number>();
  for (const run of runs) for (const [bin, n] of run.bins) merged.set(bin, (merged.get(bin) ?? 0) + n);
  const bins = [...merged].sort(([a], [b]) => a - b);
  const total = bins.reduce((sum, [, n]) => sum + n, 0);
  let seen = 0;
  for (const [bin, n] of bins) {
    seen += n;
    if (seen >= (total * p) / 100) return (bin + 1) / 10;
  }
  return 0;
}

export async function wrk(options: {
  url: string;
  connections: number;
  seconds: number;
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Pacing: each connection waits this long before each request, so at most connections × 1000 / delayMs per second. */
  delayMs?: number;
}): Promise<WrkResult> {
  const dir = await mkdtemp(path.join(tmpdir(), 'crm-wrk-'));
  try {
    const script = path.join(dir, 'bench.lua');
    await writeFile(script, WRK_SCRIPT(options.method, options.body, options.delayMs));
    const headers = Object.entries(options.headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
    // Through a shell whose `times` prints its children's CPU time (wrk's) on its second line.
    const { stdout } = await promisify(execFile)('/bin/sh', [
      '-c',
      'wrk "$@"; code=$?; times; exit $code',
      'wrk',
      '-t1',
      `-c${options.connections}`,
      `-d${options.seconds}s`,
      '--timeout',
      '5s',
      '-s',
      script,
      ...headers,
      options.url,
    ]);
    const line = stdout.split('\n').find((l) => l.startsWith('WRK_JSON '));
    if (!line) throw new Error(`wrk printed no result:\n${stdout}`);
    const times = stdout.trimEnd().split('\n').at(-1) ?? '';
    const cpuSeconds = [...times.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, [, m, sec]) => sum + Number(m) * 60 + Number(sec), 0);
    const binLine = stdout.split('\n').find((l) => l.startsWith('WRK_BINS ')) ?? 'WRK_BINS ';
    const bins = new Map(
      binLine
        .slice('WRK_BINS '.length)
        .split(',')
        .filter(Boolean)
        .map((part) => part.split(':').map(Number) as [number, number]),
    );
    return { ...(JSON.parse(line.slice('WRK_JSON '.length)) as Omit<WrkResult, 'cpuSeconds' | 'bins'>), cpuSeconds, bins };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
