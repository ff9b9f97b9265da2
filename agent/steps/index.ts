// Public surface of agent/steps: running tasks (packages, scripts, logs) and remembering them.
export { PackageCache, type PackageSource } from './package-cache.ts';
export { TaskJournal, type TaskRecord } from './task-journal.ts';
export { RESTARTED_MESSAGE, TaskManager, type TaskManagerOptions } from './task-manager.ts';
export { MASK, createMasker } from './mask.ts';
export { findExecutable } from './interpreters.ts';
