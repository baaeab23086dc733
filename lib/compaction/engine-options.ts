// Engine options (SPEC C6): an engine receives only the options it declares, and only those
// the attempt actually has a value for.
import type { CompressionEngine, CompressOptionName, CompressOptions } from '../compressors/types.js';

/** Reads `engine.acceptedOptions` (a throwing getter propagates: the engine is then never called). */
export function optionsFor(engine: CompressionEngine, available: CompressOptions): CompressOptions {
  const accepted: readonly CompressOptionName[] = engine.acceptedOptions;
  const picked: Record<string, unknown> = {};
  for (const name of accepted) {
    const value = available[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}
