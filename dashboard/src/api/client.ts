/**
 * The dashboard's only way to the server: the typed client generated from the OpenAPI document
 * (client/), authenticated by the session cookie. State-changing requests carry the session's
 * CSRF token, which lives in memory only (never in storage).
 */
import { createGantryClient, GantryApiError, unwrap, type paths } from '../../../client/index.ts';

let csrfToken: string | null = null;

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

const csrfFetch: typeof fetch = (input, init) => {
  const request = new Request(input, init);
  if (request.method !== 'GET' && request.method !== 'HEAD' && csrfToken)
    request.headers.set('x-csrf-token', csrfToken);
  return fetch(request);
};

export const api = createGantryClient({ baseUrl: window.location.origin, fetch: csrfFetch });
export { unwrap, GantryApiError };

/** The JSON body type of a GET route's 200 answer. */
export type Answer<P extends keyof paths> = paths[P] extends {
  get: { responses: { 200: { content: { 'application/json': infer T } } } };
}
  ? T
  : never;

/** True for an answer that means "signed out" (no, expired or revoked session). */
export function isSignedOut(error: unknown): boolean {
  return error instanceof GantryApiError && error.status === 401 && error.errorcode === 2002;
}

/** The message to show for a failed request. */
export function messageOf(error: unknown): string {
  if (error instanceof GantryApiError) {
    const details = error.body?.validationErrors?.flatMap((v) => v.messages) ?? [];
    return details.length > 0 && !details.every((d) => error.message.includes(d))
      ? `${error.message} (${details.join('; ')})`
      : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
