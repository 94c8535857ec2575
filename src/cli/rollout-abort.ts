import type { Command } from 'commander';
import { abortRollout } from '../rollouts/service.ts';
import { registerRolloutAction } from './rollout-common.ts';

export function register(program: Command): void {
  registerRolloutAction(program, 'abort', 'emergency stop: no OKM that has not updated is offered the version any more', abortRollout);
}
