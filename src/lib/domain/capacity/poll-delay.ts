/**
 * Delays between two reads of the inventory while waiting for capacity: the floor at first, half as long
 * again after each read that found none, up to four times the floor, plus up to 20 % of jitter so that
 * waiting runs do not read in step. The jitter only lengthens a delay: never below the floor.
 */
export function capacityPollDelay(misses: number, floorMs: number, random: () => number = Math.random): number {
  const base = Math.min(floorMs * 4, floorMs * 1.5 ** Math.max(0, misses))
  return Math.ceil(base * (1 + 0.2 * random()))
}
