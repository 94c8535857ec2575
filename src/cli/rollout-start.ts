import type { Command } from 'commander';
import { startRollout } from '../rollouts/service.ts';
import { registerRolloutAction } from './rollout-common.ts';

export function register(program: Command): void {
  registerRolloutAction(program, 'start', 'start a ready rollout: its first group is offered the version', startRollout);
}
