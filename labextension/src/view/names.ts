/**
 * Readable names for task prefixes and keys. Dask keys carry 32-character hashes and tuples
 * ("('make-022b1b0e9d68f3354d71ae87ba20420b', 15)"); a reader needs the words and the index,
 * and the hash only to tell two keys apart: its first six characters do that.
 */

const HASH = /[0-9a-f]{12,}/gi;
/** A trailing "-<hash>" or "_<hash>" that key_split would have dropped. */
const TRAILING_HASH = /[-_][0-9a-f]{8,}$/i;
const TUPLE_HEAD = /^\(\s*['"]([^'"]*)['"]/;
/** The name of dask's expression class that gathers a collection's result, which key_split
 * keeps ("finalize-hlgfinalizecompute"): the reader knows the step as "finalize". */
const INTERNAL_SUFFIX = /-hlgfinalizecompute$/i;
export const MAX_NAME = 40;

function ellipsize(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A prefix as a reader wants it: words, no hash, no tuple syntax, at most MAX_NAME long. */
export function readablePrefix(prefix: string): string {
  let name = prefix.trim();
  const head = TUPLE_HEAD.exec(name);
  if (head) {
    name = head[1];
  }
  while (TRAILING_HASH.test(name)) {
    name = name.replace(TRAILING_HASH, '');
  }
  name = name.replace(INTERNAL_SUFFIX, '');
  name = name.replace(HASH, h => `${h.slice(0, 6)}…`);
  return ellipsize(name || prefix, MAX_NAME);
}

/** A key with its hashes cut to six characters: "('make-022b1b…', 15)". */
export function shortKey(key: string, max = 80): string {
  return ellipsize(
    key.replace(HASH, h => `${h.slice(0, 6)}…`),
    max
  );
}

/** A worker's name as the views show it: Dask numbers a LocalCluster's workers 0, 1, …, and a
 * bare number labels nothing ("worker 0"); other names as they are. */
export function workerLabel(name: string): string {
  return /^\d+$/.test(name) ? `worker ${name}` : name;
}
