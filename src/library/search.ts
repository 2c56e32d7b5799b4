import type { ScriptMetadata } from './types.js';

export type Relevance = 'name_match' | 'tag_match' | 'description_match' | 'language_match';

export interface SearchHit {
  readonly metadata: ScriptMetadata;
  readonly score: number;
  /** The strongest field that matched, as the seed reports it. */
  readonly relevance: Relevance;
  /** Every field that matched at least one query word. */
  readonly matched: Relevance[];
}

const WEIGHTS: Record<Relevance, number> = {
  name_match: 3,
  tag_match: 3,
  description_match: 2,
  language_match: 1,
};

/** Lower-case words with common English endings removed, so "parsing" meets "parse". */
export function terms(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).map(stem);
}

function stem(word: string): string {
  for (const suffix of ['ing', 'ers', 'er', 'ed', 'es', 'e', 's']) {
    if (word.length > suffix.length + 2 && word.endsWith(suffix)) return word.slice(0, -suffix.length);
  }
  return word;
}

/**
 * Rank scripts for a free-text query. Each query word scores in every field it appears in
 * (name and tags weigh most); a script must match every word to rank above one that doesn't,
 * and partial matches still appear below complete ones.
 */
export function searchScripts(scripts: readonly ScriptMetadata[], query: string): SearchHit[] {
  const words = [...new Set(terms(query))];
  if (words.length === 0) return [];
  const hits: SearchHit[] = [];
  for (const metadata of scripts) {
    const fields: Record<Relevance, Set<string>> = {
      name_match: new Set(terms(metadata.name)),
      tag_match: new Set(metadata.tags.flatMap(terms)),
      description_match: new Set(terms(metadata.description)),
      language_match: new Set(terms(metadata.language)),
    };
    let score = 0;
    let wordsMatched = 0;
    const matched = new Set<Relevance>();
    for (const word of words) {
      let any = false;
      for (const field of Object.keys(fields) as Relevance[]) {
        const values = fields[field];
        const exact = values.has(word);
        const partial = !exact && word.length >= 3 && [...values].some((v) => v.startsWith(word));
        if (exact || partial) {
          score += WEIGHTS[field] * (exact ? 1 : 0.5);
          matched.add(field);
          any = true;
        }
      }
      if (any) wordsMatched++;
    }
    if (wordsMatched === 0) continue;
    score += 10 * (wordsMatched / words.length);
    const ordered = (Object.keys(WEIGHTS) as Relevance[]).filter((field) => matched.has(field));
    hits.push({ metadata, score, relevance: ordered[0] ?? 'description_match', matched: ordered });
  }
  return hits.sort((a, b) => b.score - a.score || a.metadata.name.localeCompare(b.metadata.name));
}
