/** Server-side paging: which slice of `totalCount` is shown, and buttons to move (kept in the URL). */
import { setSearchParams } from '../router.tsx';

export function Pager({ skip, take, totalCount }: { skip: number; take: number; totalCount: number }) {
  if (totalCount <= take && skip === 0) return <p className="muted small">{totalCount} in all</p>;
  return (
    <nav className="pager" aria-label="Pages">
      <button
        type="button"
        disabled={skip === 0}
        onClick={() => setSearchParams({ skip: Math.max(0, skip - take) || undefined })}
      >
        Previous page
      </button>
      <span>
        {Math.min(totalCount, skip + 1)}–{Math.min(totalCount, skip + take)} of {totalCount}
      </span>
      <button type="button" disabled={skip + take >= totalCount} onClick={() => setSearchParams({ skip: skip + take })}>
        Next page
      </button>
    </nav>
  );
}

/** skip and search from the current URL. */
export function pageParams(url: URL): { skip: number; search: string } {
  return {
    skip: Math.max(0, Number(url.searchParams.get('skip') ?? 0) || 0),
    search: url.searchParams.get('search') ?? '',
  };
}
