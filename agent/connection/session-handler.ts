// The seam between the connection (transport) and the task manager (what the messages mean).
import type { AgentMessage, ServerMessage, TaskResult } from './proto.ts';

/** What the task manager may do with the current session. */
export interface AgentLink {
  /**
   * Writes the message when a session is welcomed and the stream is not congested; returns false
   * otherwise, and the caller keeps the message (its data is on disk) for the next onWritable().
   */
  trySend(message: AgentMessage): boolean;
}

export interface HelloState {
  readonly runningTaskIds: string[];
  readonly unacknowledgedResults: TaskResult[];
}

/** Implemented by the task manager; called by the connection. */
export interface SessionHandler {
  /** Task state for the Hello that opens every session. */
  hello(): HelloState;
  /** The session was welcomed, or the stream drained: send what is waiting. */
  onWritable(): void;
  /** The session ended: everything not acknowledged must be sent again on the next one. */
  onDisconnected(): void;
  onMessage(message: ServerMessage): void;
}
