import type { Command } from 'commander';
import { getRolloutView } from '../rollouts/service.ts';
import { registerRolloutAction } from './rollout-common.ts';

export function register(program: Command): void {
  registerRolloutAction(program, 'show', "print a rollout and its groups' progress", getRolloutView);
}
