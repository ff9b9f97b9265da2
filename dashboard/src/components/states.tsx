/** What a page shows while loading or when its request failed. */
import { messageOf } from '../api/client.ts';

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function Failure({ error }: { error: unknown }) {
  return (
    <p className="error" role="alert">
      {messageOf(error)}
    </p>
  );
}

/** Why a control is missing or disabled, next to where it would be. */
export function Refusal({ reason }: { reason: string | null }) {
  return reason ? <span className="refusal">{reason}</span> : null;
}
