// Runs a background worker step while the app is up: drains due work, polls at an interval, stops cleanly on close.
import type { FastifyInstance } from 'fastify';

/**
 * Calls `step` (which returns how many items it handled) again at once while it finds work, otherwise after
 * `intervalMs`. Starts when the app is ready; on close it stops polling and waits for the step in progress.
 */
export function runPollLoop(app: FastifyInstance, label: string, intervalMs: number, step: () => Promise<number>): void {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const tick = () => {
    running = (async () => {
      try {
        while (!stopped && (await step()) > 0);
      } catch (error) {
        app.log.error({ err: error }, `${label} failed`);
      }
    })().finally(() => {
      running = undefined;
      if (!stopped) timer = setTimeout(tick, intervalMs);
    });
  };

  app.addHook('onReady', async () => {
    timer = setTimeout(tick, 0);
  });
  app.addHook('preClose', async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  });
}
