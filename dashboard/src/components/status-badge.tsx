/** A deployment or target status as a coloured badge (the word is always there, not only the colour). */
const TONE: Record<string, string> = {
  Completed: 'ok',
  Succeeded: 'ok',
  Online: 'ok',
  Failed: 'bad',
  Offline: 'bad',
  Cancelled: 'muted',
  Skipped: 'muted',
  Running: 'busy',
  Validating: 'busy',
  Queued: 'wait',
  AwaitingSlot: 'wait',
  Pending: 'wait',
};

export function StatusBadge({ status }: { status: string }) {
  return (
    <span className={`badge badge-${TONE[status] ?? 'muted'}`}>
      {status === 'AwaitingSlot' ? 'Awaiting slot' : status}
    </span>
  );
}
