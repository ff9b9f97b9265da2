/** The one paging rule for list endpoints (contract §1): skip (default 0), take (default 50, max 500). */
export const DEFAULT_TAKE = 50;
export const MAX_TAKE = 500;

export interface Page {
  skip: number;
  take: number;
}

export interface PageRequest {
  skip?: number | undefined;
  take?: number | undefined;
}

export function toPage(request: PageRequest): Page {
  return {
    skip: Math.max(0, request.skip ?? 0),
    take: Math.min(MAX_TAKE, Math.max(1, request.take ?? DEFAULT_TAKE)),
  };
}

export interface Paged<T> {
  items: T[];
  totalCount: number;
}
