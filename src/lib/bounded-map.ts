// A process's memory of at most a given number of entries, in a Map: the least recently kept entry goes first.

/** Keeps `value` under `key` as the newest entry of `map`, and drops the oldest while `map` holds more than `max`. */
export function keepBounded<Key, Value>(map: Map<Key, Value>, key: Key, value: Value, max: number): void {
  // A Map iterates in insertion order: re-inserting makes the entry the newest.
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value as Key);
}
