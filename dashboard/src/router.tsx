/**
 * A small router over the History API: every page has a deep link (`/projects/<id>`,
 * `/deployments/<id>#L<tick>`), filters and paging live in the query string.
 */
import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

const listeners = new Set<() => void>();
const notify = () => listeners.forEach((listener) => listener());
window.addEventListener('popstate', notify);

function subscribe(listener: () => void) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The current location as one string (so React compares it cheaply). */
export function useLocation(): URL {
  const href = useSyncExternalStore(subscribe, () => window.location.href);
  return new URL(href);
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  notify();
}

/** Changes query parameters of the current page (undefined or '' removes one). */
export function setSearchParams(changes: Record<string, string | number | undefined>): void {
  const url = new URL(window.location.href);
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined || value === '') url.searchParams.delete(key);
    else url.searchParams.set(key, String(value));
  }
  navigate(url.pathname + url.search, { replace: true });
}

export function Link({ to, onClick, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { to: string }) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
    event.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={follow} {...rest} />;
}

export type Route =
  | { page: 'home' }
  | { page: 'sign-in' }
  | { page: 'overview'; workspaceId: string }
  | { page: 'machines'; workspaceId: string }
  | { page: 'topology'; workspaceId: string }
  | { page: 'project'; projectId: string }
  | { page: 'deployment'; deploymentId: string }
  | { page: 'not-found' };

export function matchRoute(pathname: string): Route {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const [first, id, sub] = parts;
  if (parts.length === 0) return { page: 'home' };
  if (first === 'sign-in' && parts.length === 1) return { page: 'sign-in' };
  if (first === 'workspaces' && id) {
    if (sub === undefined) return { page: 'overview', workspaceId: id };
    if (sub === 'machines') return { page: 'machines', workspaceId: id };
    if (sub === 'topology') return { page: 'topology', workspaceId: id };
  }
  if (first === 'projects' && id && parts.length === 2) return { page: 'project', projectId: id };
  if (first === 'deployments' && id && parts.length === 2) return { page: 'deployment', deploymentId: id };
  return { page: 'not-found' };
}

export const paths = {
  overview: (workspaceId: string) => `/workspaces/${encodeURIComponent(workspaceId)}`,
  machines: (workspaceId: string) => `/workspaces/${encodeURIComponent(workspaceId)}/machines`,
  topology: (workspaceId: string) => `/workspaces/${encodeURIComponent(workspaceId)}/topology`,
  project: (projectId: string) => `/projects/${encodeURIComponent(projectId)}`,
  deployment: (deploymentId: string) => `/deployments/${encodeURIComponent(deploymentId)}`,
};
