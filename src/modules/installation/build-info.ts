// What this build is: the package version and the git commit it runs from (read once, at start).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../lib/project-root.js';

/** The git commit the service was built from, when it runs from a checkout (`.git` beside package.json); else null. */
function gitCommit(): string | null {
  try {
    let gitDir = path.join(projectRoot, '.git');
    const dotGit = readFileSync(gitDir, 'utf8');
    // A worktree's `.git` is a file naming its git directory.
    gitDir = path.resolve(projectRoot, dotGit.replace(/^gitdir:\s*/, '').trim());
    return headOf(gitDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EISDIR') return headOf(path.join(projectRoot, '.git'));
    return null;
  }
}

function headOf(gitDir: string): string | null {
  try {
    const head = readFileSync(path.join(gitDir, 'HEAD'), 'utf8').trim();
    if (!head.startsWith('ref: ')) return /^[0-9a-f]{40}$/.test(head) ? head : null;
    const ref = head.slice(5);
    // Worktrees keep refs in the common directory.
    const common = (() => {
      try {
        return path.resolve(gitDir, readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim());
      } catch {
        return gitDir;
      }
    })();
    for (const dir of [gitDir, common]) {
      try {
        return readFileSync(path.join(dir, ref), 'utf8').trim();
      } catch {
        // packed, or in the other directory
      }
    }
    const packed = readFileSync(path.join(common, 'packed-refs'), 'utf8');
    return (
      packed
        .split('\n')
        .find((line) => line.endsWith(` ${ref}`))
        ?.slice(0, 40) ?? null
    );
  } catch {
    return null;
  }
}

export const VERSION = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
export const COMMIT = gitCommit();
