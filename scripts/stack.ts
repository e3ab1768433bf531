// `make stack`: the production topology on this machine (see scripts/stack/stack.ts), until Ctrl-C or SIGTERM.
import path from 'node:path';
import { startStack } from './stack/stack.js';

const dir = path.resolve(process.env.STACK_DIR || '.data/stack');
const port = process.env.STACK_PORT ? Number(process.env.STACK_PORT) : 8080;
const stack = await startStack({ dir, port, log: (line) => console.error(line) }).catch((error: Error) => {
  console.error(`stack failed to start: ${error.message}`);
  process.exit(1);
});
console.log(`stack ready: ${stack.origin}`);
console.log(
  `complete setup: curl -X POST ${stack.origin}/api/v1/setup/ -H 'content-type: application/json' -d '{"setup_token": "'"$(cat ${path.join(dir, 'setup-token')})"'", "username": "admin", "email": "admin@example.com", "password": "a long password", "organization_name": "Acme", "organization_slug": "acme"}'`,
);
console.log(
  `parts: ${stack.instances.map((i) => `${i.name} 127.0.0.1:${i.port}`).join(', ')}; PgBouncer 127.0.0.1:${stack.bouncer.port}; ` +
    `replica ${new URL(stack.replica.url).port}; data in ${dir}. Ctrl-C stops everything.`,
);
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    console.error('stopping the stack');
    void stack.stop().then(() => process.exit(0));
  });
}
