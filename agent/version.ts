// The build (scripts/build-agent.ts) may stamp another version in; from sources it is this one.
declare const __GANTRY_AGENT_VERSION__: string | undefined;

/** Reported in Register and Hello; bump with the package version. */
export const AGENT_VERSION: string = typeof __GANTRY_AGENT_VERSION__ === 'string' ? __GANTRY_AGENT_VERSION__ : '0.1.0';
