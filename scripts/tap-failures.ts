// Collects the failures of tap's TAP output, with their subtest path and diagnostics, to restate them after a run.

const MAX_FAILURES_RESTATED = 12;
const MAX_LINES_PER_FAILURE = 60;

/**
 * Keeps each `not ok` line of tap's output with the subtests it sits in and its YAML diagnostics (up to the closing
 * `...` at its indentation), to restate them after the run.
 */
export class FailureCollector {
  private partial = '';
  private readonly subtests: Array<{ indent: number; name: string }> = [];
  private readonly blocks: string[][] = [];
  private current: { lines: string[]; end: string } | undefined;
  private count = 0;

  push(text: string): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) this.line(line);
  }

  private line(line: string): void {
    if (this.current) {
      // The diagnostics are indented two more than their `not ok`; a line that is not ends a block without any.
      if (line.startsWith(this.current.end.slice(0, -3))) {
        if (this.current.lines.length < MAX_LINES_PER_FAILURE) this.current.lines.push(line);
        if (line === this.current.end) this.current = undefined;
        return;
      }
      this.current = undefined;
    }
    const indent = line.length - line.trimStart().length;
    const subtest = /^\s*# Subtest: (.*)$/.exec(line);
    if (subtest) {
      while (this.subtests.length > 0 && this.subtests.at(-1)!.indent >= indent) this.subtests.pop();
      this.subtests.push({ indent, name: subtest[1]! });
      return;
    }
    if (!/^\s*not ok \d+/.test(line)) return;
    this.count += 1;
    if (this.blocks.length >= MAX_FAILURES_RESTATED) return;
    const path = this.subtests.filter((s) => s.indent < indent).map((s) => s.name);
    const lines = [`# in: ${path.join(' > ') || '(top level)'}`, line];
    this.blocks.push(lines);
    this.current = { lines, end: `${' '.repeat(indent + 2)}...` };
  }

  report(): string {
    if (this.count === 0) return '';
    const shown = this.blocks.length < this.count ? ` (the first ${this.blocks.length})` : '';
    return `failures, restated: ${this.count}${shown}\n${this.blocks.map((b) => b.join('\n')).join('\n\n')}\n`;
  }
}
