// Field-level merge used by a sync round (see docs/sync.md).

export const SYNC_BATCH_SIZE = 50;
export const CONFLICT_WINDOW_MS = 10_000;
export const BACKOFF_SECONDS = [2, 4, 8, 16] as const;
export const STEADY_RETRY_SECONDS = 60;

export interface Stamped<T> {
  value: T;
  clock: number; // hybrid logical clock, larger wins
  device: string;
  editedAt: number; // milliseconds since the epoch
}

export function pickField<T>(local: Stamped<T>, remote: Stamped<T>): Stamped<T> {
  if (local.clock !== remote.clock) {
    return local.clock > remote.clock ? local : remote;
  }
  return local.device > remote.device ? local : remote;
}

export function needsConflictCopy(local: Stamped<string>, remote: Stamped<string>): boolean {
  return (
    local.value !== remote.value &&
    Math.abs(local.editedAt - remote.editedAt) < CONFLICT_WINDOW_MS
  );
}

export function retryDelaySeconds(attempt: number): number {
  return attempt < BACKOFF_SECONDS.length ? BACKOFF_SECONDS[attempt] : STEADY_RETRY_SECONDS;
}
