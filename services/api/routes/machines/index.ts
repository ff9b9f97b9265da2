import type { Routes } from '../route-types.ts';

// Placeholder: filled in by the work on this resource.
export const machineRoutes: Routes = async () => {};
