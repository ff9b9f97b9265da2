/** Commander's parser for an option given several times (`--env A --env B` → ['A', 'B']). */
export const repeatable = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];
