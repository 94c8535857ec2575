import type { Command } from 'commander';
import { pauseRollout } from '../rollouts/service.ts';
import { registerRolloutAction } from './rollout-common.ts';

export function register(program: Command): void {
  registerRolloutAction(program, 'pause', 'pause a running rollout: no offers until it resumes', pauseRollout);
}
