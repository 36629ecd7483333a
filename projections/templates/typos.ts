/**
 * How many edits a typed word may be from a word of the text and still be taken for it: one from
 * 4 letters, two from 8. An edit is a letter missing, extra or wrong, or two neighbours swapped.
 * Shorter words must be typed right: one edit from a 3-letter word reaches most other short words.
 */
export function editsAllowed(word: string): number {
  const letters = [...word].length;
  return letters >= 8 ? 2 : letters >= 4 ? 1 : 0;
}

/**
 * Damerau–Levenshtein distance in its optimal string alignment form (no letter edited twice),
 * which counts a swap of neighbours as one edit where Levenshtein counts two. Past `max` it
 * answers `max + 1`.
 */
export function editDistance(a: string, b: string, max: number): number {
  const s = [...a];
  const t = [...b];
  if (Math.abs(s.length - t.length) > max) return max + 1;
  let before: number[] = [];
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const row = [i];
    for (let j = 1; j <= t.length; j++) {
      let d = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (s[i - 1] === t[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row.push(d);
    }
    before = previous;
    previous = row;
  }
  return Math.min(previous[t.length]!, max + 1);
}

/** The words among `candidates` that a person who typed `word` may have meant (not the word itself). */
export function closeWords(word: string, candidates: readonly string[]): string[] {
  const max = editsAllowed(word);
  if (max === 0) return [];
  return candidates.filter((c) => c !== word && editDistance(word, c, max) <= max);
}
