// Tag normalisation for Quill notes.

export const MAX_TAGS_PER_NOTE = 12;
export const MAX_TAG_LENGTH = 32;

/**
 * Normalise one tag: trim, lowercase, collapse inner whitespace to a
 * single dash and drop a leading '#'. Returns null for an empty tag.
 */
export function normalizeTag(raw: string): string | null {
  const tag = raw.trim().replace(/^#/, "").toLowerCase().replace(/\s+/g, "-");
  if (tag.length === 0) {
    return null;
  }
  return tag.slice(0, MAX_TAG_LENGTH);
}

/**
 * Normalise a tag list: drop empties and duplicates, keep the first
 * occurrence order, and refuse more than MAX_TAGS_PER_NOTE tags.
 */
export function normalizeTags(raw: readonly string[]): string[] {
  const seen = new Set<string>();
  for (const item of raw) {
    const tag = normalizeTag(item);
    if (tag !== null) {
      seen.add(tag);
    }
  }
  if (seen.size > MAX_TAGS_PER_NOTE) {
    throw new RangeError(`a note may carry at most ${MAX_TAGS_PER_NOTE} tags`);
  }
  return [...seen];
}
