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

/** What the control plane's Welcome says about the session. */
export interface SessionSettings {
  /** It reads LogBatch.chunk (else: one LogLine per line, as before chunks). */
  readonly acceptsLogChunks: boolean;
  /** Log text the agent may have sent and not had acknowledged (0: the agent's default). */
  readonly maxUnackedLogBytes: number;
}

/** Implemented by the task manager; called by the connection. */
export interface SessionHandler {
  /** Task state for the Hello that opens every session. */
  hello(): HelloState;
  /** The session was welcomed (before the first onWritable of the session). */
  onWelcome(settings: SessionSettings): void;
  /** The session was welcomed, or the stream drained: send what is waiting. */
  onWritable(): void;
  /** The session ended: everything not acknowledged must be sent again on the next one. */
  onDisconnected(): void;
  onMessage(message: ServerMessage): void;
}
