// Caps that stop zip/gzip bombs and entry floods before they fill the disk.

export interface ExtractLimits {
  /** Most entries (files + folders) one archive may hold. */
  readonly maxEntries: number;
  /** Most bytes all extracted files together may hold. */
  readonly maxTotalBytes: number;
  /** Highest uncompressed/compressed ratio of one zip entry (tar.gz: of the whole stream). */
  readonly maxCompressionRatio: number;
}

export const DEFAULT_EXTRACT_LIMITS: ExtractLimits = {
  maxEntries: 100_000,
  maxTotalBytes: 8 * 1024 ** 3,
  maxCompressionRatio: 1000,
};

/** Entries smaller than this are not ratio-checked: tiny files of zeros compress absurdly well. */
export const RATIO_CHECK_MIN_BYTES = 1024 * 1024;
