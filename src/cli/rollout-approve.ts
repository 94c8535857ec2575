import type { Command } from 'commander';
import { approveRollout } from '../rollouts/service.ts';
import { registerRolloutAction } from './rollout-common.ts';

export function register(program: Command): void {
  registerRolloutAction(program, 'approve', 'four eyes: approve a rollout that requires it, as an operator other than its creator (cli:<account>)', approveRollout);
}
