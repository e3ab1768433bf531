// Runs the project's Prisma CLI with the WebAssembly schema-engine shim, so no command tries to download the native engine.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const child = spawn(path.join(projectRoot, 'node_modules', '.bin', 'prisma'), process.argv.slice(2), {
  stdio: 'inherit',
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: path.join(projectRoot, 'scripts', 'prisma-schema-engine-shim.mjs'),
    // Offline machines: no update check against Prisma's servers.
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
  },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  process.exitCode = code ?? (signal === 'SIGINT' ? 130 : 143);
});
