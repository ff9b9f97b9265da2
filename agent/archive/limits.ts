// Caps that stop zip/gzip bombs and entry floods before they fill the disk.

export interface ExtractLimits {
  /** Most entries (files + folders) one archive may hold. */
  readonly maxEntries: number;
  /** Most bytes all extracted files together may hold. */
  readonly maxTotalBytes: number;
  /** Why maxTotalBytes is what it is, when it is not the configured cap (the disk's free space). */
  readonly totalBytesReason?: string;
  /** Highest uncompressed/compressed ratio of one zip entry (tar.gz: of the whole stream). */
  readonly maxCompressionRatio: number;
}

/** The unpacked-size cap when none is configured: this, or 10 × the package when that is more. */
export const DEFAULT_MIN_UNPACKED_BYTES = 4 * 1024 ** 3;
export const UNPACKED_PER_PACKAGE_BYTE = 10;

export const DEFAULT_EXTRACT_LIMITS = {
  maxEntries: 100_000,
  maxCompressionRatio: 1000,
} as const;

/** Disk space left free after an extraction, so the agent's journal and scripts can still write. */
export const DISK_RESERVE_BYTES = 256 * 1024 ** 2;

/** Entries smaller than this are not ratio-checked: tiny files of zeros compress absurdly well. */
export const RATIO_CHECK_MIN_BYTES = 1024 * 1024;
