// Bounds how much of one kind of work runs at once in this process: the rest waits in arrival order, or is refused.

/** `concurrency` runs at once; up to `queue` more wait, in arrival order; beyond that `run` throws what `busy` makes. */
export class Slots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    public concurrency: number,
    public queue = Number.POSITIVE_INFINITY,
    private readonly busy: () => Error = () => new Error('no slot free and the queue is full'),
  ) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.queue) throw this.busy();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running += 1;
    }
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiter, so `running` never drops below what is actually running.
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}
