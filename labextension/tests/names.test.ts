import { describe, expect, it } from 'vitest';
import { MAX_NAME, readablePrefix, shortKey } from '../src/view/names';

describe('readable names', () => {
  it('keeps words, drops hashes and tuple syntax', () => {
    expect(readablePrefix('make-events')).toBe('make-events');
    expect(readablePrefix('getitem')).toBe('getitem');
    expect(readablePrefix('finalize-hlgfinalizecompute')).toBe('finalize'); // dask's class name
    expect(readablePrefix('sum-aggregate-5bb0c4a77d1b2a3c9e')).toBe('sum-aggregate');
    expect(readablePrefix("('shuffle-transfer-4bb9d94e34225c84e91a627011f9a080', 5)")).toBe(
      'shuffle-transfer'
    );
    expect(readablePrefix('x'.repeat(100))).toHaveLength(MAX_NAME);
  });

  it('cuts the hashes of a key to six characters', () => {
    expect(shortKey("('make-022b1b0e9d68f3354d71ae87ba20420b', 15)")).toBe("('make-022b1b…', 15)");
    expect(shortKey('fails-on-purpose')).toBe('fails-on-purpose');
    expect(shortKey('k'.repeat(200)).length).toBeLessThanOrEqual(80);
  });
});
