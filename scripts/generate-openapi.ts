// Writes openapi/openapi.json from the route schemas; with --check, exits 1 when the committed file is stale.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { projectRoot } from '../src/lib/project-root.js';

export const OPENAPI_FILE = path.join(projectRoot, 'openapi', 'openapi.json');

/**
 * The document as committed (2-space JSON and a final newline). A fixed environment keeps it independent of the
 * caller's: the database URL only satisfies the config (the client connects lazily and nothing queries it), the
 * background workers are off so `ready()` starts nothing, and the app is closed without ever listening.
 */
export async function generateOpenApiDocument(): Promise<string> {
  const config = loadConfig({
    NODE_ENV: 'production',
    DATABASE_URL: 'postgresql://openapi-generator@127.0.0.1:9/unused',
    JWT_SECRET: 'openapi-generator-secret-never-used-to-sign',
    LOG_LEVEL: 'silent',
  });
  const app = await buildApp(config, { backgroundWorkers: false });
  try {
    await app.ready();
    return `${JSON.stringify(app.swagger(), null, 2)}\n`;
  } finally {
    await app.close();
  }
}

/** The command line: writes the file, or with `--check` compares it; returns the exit code. */
export async function openapiCli(args: string[], output: Pick<Console, 'log' | 'error'> = console): Promise<number> {
  const document = await generateOpenApiDocument();
  const relative = path.relative(process.cwd(), OPENAPI_FILE);
  if (args.includes('--check')) {
    const committed = await readFile(OPENAPI_FILE, 'utf8').catch(() => null);
    if (committed === document) {
      output.log(`${relative} is up to date.`);
      return 0;
    }
    output.error(`${relative} is stale: run \`npm run openapi\` and commit the result.`);
    return 1;
  }
  await mkdir(path.dirname(OPENAPI_FILE), { recursive: true });
  await writeFile(OPENAPI_FILE, document);
  output.log(`Wrote ${relative}.`);
  return 0;
}

if (process.argv[1] && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  process.exitCode = await openapiCli(process.argv.slice(2));
}
