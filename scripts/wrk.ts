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
    return { ...(JSON.parse(line.slice('WRK_JSON '.length)) as Omit<WrkResult, 'cpuSeconds'>), cpuSeconds };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
