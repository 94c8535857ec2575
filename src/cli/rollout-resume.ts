import type { Command } from 'commander';
import { resumeRollout } from '../rollouts/service.ts';
import { registerRolloutAction } from './rollout-common.ts';

export function register(program: Command): void {
  registerRolloutAction(program, 'resume', 'resume a paused rollout', resumeRollout);
}
