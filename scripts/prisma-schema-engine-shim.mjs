#!/usr/bin/env node
// Stands in for Prisma's native schema-engine binary (PRISMA_SCHEMA_ENGINE_BINARY), forwarding the CLI's JSON-RPC to the WebAssembly engine.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { adminQuery, connectionFields, openSchemaEngine } from './wasm-schema-engine.mjs';

/** Parses the native engine's command line: --datamodels (repeated), --datasource, ... then optionally `cli <command>`. */
function parseArgs(argv) {
  const options = { datamodels: [], datasource: undefined, cli: undefined, version: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--version' || arg === '-V') options.version = true;
    else if (arg === '--datamodels') options.datamodels.push(argv[++i]);
    else if (arg === '--datasource') options.datasource = JSON.parse(argv[++i]);
    else if (arg === '--enabled-preview-features' || arg === '--extension-types') i++;
    else if (arg === 'cli') {
      options.cli = argv[i + 1];
      break;
    }
  }
  return options;
}

async function engineVersion() {
  const glue = fileURLToPath(import.meta.resolve('@prisma/schema-engine-wasm/schema_engine_bg'));
  const { version } = JSON.parse(await readFile(path.join(path.dirname(glue), 'package.json'), 'utf8'));
  return version.slice(version.lastIndexOf('.') + 1);
}

/**
 * The CLI reads a failed `cli` command's stderr as JSON log lines after the first one, looking for an ERROR with
 * an error code (P1003 "database does not exist" makes `migrate` offer to create it).
 */
function failCliCommand(errorCode, message) {
  const line = (level, fields) => JSON.stringify({ level, target: 'schema_engine::logger', fields });
  process.stderr.write(`${line('INFO', { message: 'schema engine shim' })}\n${line('ERROR', { error_code: errorCode, message })}\n`);
  process.exitCode = 1;
}

function errorCodeOf(error) {
  if (error.code === '3D000') return 'P1003';
  if (error.code === '28P01' || error.code === '28000') return 'P1000';
  return 'P1001';
}

async function runCliCommand(command, url) {
  if (!url) return failCliCommand('P1012', 'The datasource URL is empty: set DATABASE_URL.');
  const fields = connectionFields(url);
  const where = `${fields.host}:${fields.port}`;
  const query = (database, sql) => adminQuery({ ...fields, database }, sql);
  try {
    if (command === 'can-connect-to-database') await query(fields.database, 'SELECT 1');
    else if (command === 'create-database') await query('postgres', `CREATE DATABASE "${fields.database.replaceAll('"', '""')}"`);
    else return failCliCommand('P1012', `unsupported schema engine command: cli ${command}`);
  } catch (error) {
    const code = errorCodeOf(error);
    const message =
      code === 'P1003'
        ? `Database \`${fields.database}\` does not exist on the database server at \`${where}\`.`
        : `Cannot use the database server at \`${where}\`: ${error.message}`;
    return failCliCommand(code, message);
  }
}

/** Line-delimited JSON-RPC 2.0 on stdin/stdout, as the native engine speaks it. */
async function serveRpc(options) {
  const url = options.datasource?.url;
  const datamodels = await Promise.all(options.datamodels.map(async (file) => [file, await readFile(file, 'utf8')]));
  let engine;
  let nextOwnRequestId = 1;
  const send = (message) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);

  const handle = async (request) => {
    if (!url) throw new Error('The datasource URL is empty: set DATABASE_URL.');
    engine ??= await openSchemaEngine({ url, datamodels, log: (line) => process.stderr.write(`${line}\n`) });
    if (request.method === 'getDatabaseVersion') return engine.call('version', request.params ?? null);
    if (request.method === 'diff') {
      // The native engine prints the diff itself by asking the CLI to, and returns no stdout.
      const result = await engine.call('diff', request.params);
      if (result.stdout !== null && result.stdout !== undefined) {
        send({ id: `shim-${nextOwnRequestId++}`, method: 'print', params: { content: result.stdout } });
      }
      return { ...result, stdout: null };
    }
    return engine.call(request.method, request.params);
  };

  let queue = Promise.resolve();
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (line.trim() === '') return;
    const message = JSON.parse(line);
    if (typeof message.method !== 'string') return; // the CLI's answer to a print request
    queue = queue.then(async () => {
      try {
        send({ id: message.id, result: (await handle(message)) ?? null });
      } catch (error) {
        const data = error?.data ?? { message: error?.message ?? String(error), is_panic: false };
        send({ id: message.id, error: { code: 4466, message: data.message, data } });
      }
    });
  });
  await new Promise((resolve) => lines.once('close', resolve));
  await queue;
  await engine?.close();
}

const options = parseArgs(process.argv.slice(2));
if (options.version) console.log(`schema-engine-cli ${await engineVersion()}`);
else if (options.cli !== undefined) await runCliCommand(options.cli, options.datasource?.url);
else await serveRpc(options);
