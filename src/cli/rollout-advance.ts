import type { Command } from 'commander';
import { advanceRollout } from '../rollouts/service.ts';
import { registerRolloutAction } from './rollout-common.ts';

export function register(program: Command): void {
  registerRolloutAction(program, 'advance', 'start the next group now, whatever the thresholds say', advanceRollout);
}
