/** What a person probably meant by a word that matched nothing: the closest known word, by edit distance. */

/** Levenshtein distance: insertions, deletions and substitutions. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({length: b.length + 1}, (_, index) => index)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      )
    }

    previous = current
  }

  return previous[b.length] as number
}

/**
 * The candidate closest to `typed`, if it is close enough to be a typo of it: at most a third of its characters
 * differ (at least one may). Ties go to the first candidate.
 */
export function closest(typed: string, candidates: Iterable<string>): string | undefined {
  let best: {word: string; distance: number} | undefined
  for (const word of candidates) {
    const distance = editDistance(typed, word)
    if (distance > 0 && (best === undefined || distance < best.distance)) best = {distance, word}
  }

  return best && best.distance <= Math.max(1, Math.floor(typed.length / 3)) ? best.word : undefined
}
