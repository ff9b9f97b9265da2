// The one error the archive module throws on purpose: the archive is hostile or too large, and
// nothing was extracted. Across processes it travels as `{ code: 'ARCHIVE_REFUSED', message }`.

export class ArchiveRefusedError extends Error {
  readonly code = 'ARCHIVE_REFUSED';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ArchiveRefusedError';
  }
}
