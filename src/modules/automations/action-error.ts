// The failure of an automation action: a message safe to store as the run's error_message, and whether to retry.

export class ActionError extends Error {
  override name = 'ActionError';
  /** `retryable`: a transient failure (timeout, refused connection, 5xx) the worker tries again with backoff. */
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** The action was not attempted because a sending policy refused it: the run ends `skipped`, never retried. */
export class ActionSkipped extends ActionError {
  override name = 'ActionSkipped';
  constructor(message: string) {
    super(message, false);
  }
}
