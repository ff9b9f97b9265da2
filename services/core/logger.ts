import pino, { type Logger } from 'pino';

export type { Logger };

/** Fields that must never reach a log line, wherever they appear. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'apiKey',
  '*.apiKey',
  'registrationToken',
  '*.registrationToken',
  'theValue',
  '*.theValue',
  'password',
  '*.password',
];

export function createLogger(level: string): Logger {
  return pino({ level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } });
}
