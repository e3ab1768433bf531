// `make restore-test`: restores a backup into a scratch directory and checks migrations and row counts (see docs/operations.md, Backups).
import { loadBootstrapConfig } from '../src/config.js';
import { latestBackup, restoreTest } from '../src/db/embedded-backup.js';

const { dataDir } = loadBootstrapConfig(process.env);
const backup = process.argv[2] || (await latestBackup(process.argv[3] ?? 'backups'));
if (!backup) {
  console.error('restore-test: no backup given (BACKUP=…) and none found in BACKUP_DIR');
  process.exit(2);
}
const result = await restoreTest({ dataDir, backup, log: (line) => console.error(line) });
if (result.ok) {
  console.log(`restore test of ${backup} passed: every migration applied, every table's row count as in the manifest`);
} else {
  console.error(`restore test of ${backup} FAILED:\n  ${result.problems.join('\n  ')}`);
  process.exitCode = 1;
}
