// Public surface of agent/upgrade: the agent replacing itself with its control plane's bundle.
export { AgentUpgrader, type AgentUpgraderOptions, type UpgradeLink, type UpgradeTasks } from './upgrader.ts';
export {
  AGENT_ENTRY,
  installLayout,
  prepareRelease,
  swapTo,
  UpgradeError,
  type InstallLayout,
} from './self-upgrade.ts';
